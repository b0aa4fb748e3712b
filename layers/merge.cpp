#include "layers/merge.h"

#include <algorithm>

#include "backend/ops.h"
#include "layers/mask_ops.h"

namespace keras::layers {

std::string MergeImpl::shapes_str(const std::vector<Shape>& shapes) {
  std::string s;
  for (const auto& sh : shapes) s += (s.empty() ? "" : ", ") + shape_str(sh);
  return s;
}

void MergeImpl::check_input_count(const std::vector<Shape>& shapes) const {
  const size_t n = shapes.size(), lo = min_inputs(), hi = max_inputs();
  if (n >= lo && n <= hi) return;
  std::string expected = lo == hi ? "exactly " + std::to_string(lo) + " inputs"
                                  : "a list of at least " + std::to_string(lo) + " inputs";
  fail<ShapeError>(where(), expected, std::to_string(n) + " input(s) of shape(s) " + shapes_str(shapes),
                   "Call a merge layer on a list of tensors: layer({a, b}).");
}

int64_t MergeImpl::common_batch(const std::vector<Shape>& shapes) const {
  int64_t batch = -1;
  for (const auto& s : shapes) {
    if (s.empty())
      fail<ShapeError>(where(), "inputs with a batch axis (rank >= 1)", "shapes " + shapes_str(shapes));
    if (s[0] < 0) continue;
    if (batch >= 0 && s[0] != batch)
      fail<ShapeError>(where(), "inputs of one batch size", "shapes " + shapes_str(shapes),
                       "Merge layers cannot merge tensors with different batch sizes.");
    batch = s[0];
  }
  return batch;
}

void MergeImpl::check_same_dtypes(const std::vector<DType>& dtypes) const {
  for (size_t i = 1; i < dtypes.size(); ++i)
    if (dtypes[i] != dtypes[0]) {
      std::string got;
      for (auto d : dtypes) got += (got.empty() ? "" : ", ") + dtype_name(d);
      fail<TypeError>(where(), "inputs of one dtype", "dtypes " + got, "Cast the inputs first (ops::cast).");
    }
}

namespace {
// NumPy broadcasting of non-batch shapes; an unknown extent (-1) fits anything and stays unknown
// only when the other extent is 1 or unknown too. Returns false when the shapes do not broadcast.
bool broadcast_into(Shape& acc, const Shape& s) {
  const size_t rank = std::max(acc.size(), s.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - acc.size() ? 1 : acc[i - (rank - acc.size())];
    const int64_t b = i < rank - s.size() ? 1 : s[i - (rank - s.size())];
    if (a == b || b == 1) out[i] = a;
    else if (a == 1) out[i] = b;
    else if (a < 0) out[i] = b;
    else if (b < 0) out[i] = a;
    else return false;
  }
  acc = std::move(out);
  return true;
}
}  // namespace

void MergeImpl::validate_input(const std::vector<Shape>& shapes) const {
  check_input_count(shapes);
  common_batch(shapes);
  Shape acc;
  for (const auto& s : shapes)
    if (!broadcast_into(acc, Shape(s.begin() + 1, s.end())))
      fail<ShapeError>(where(), "inputs of equal or broadcastable shapes (batch axis aside)",
                       "shapes " + shapes_str(shapes),
                       "Each pair of trailing extents must be equal or one of them 1.");
}

std::vector<Shape> MergeImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape acc;
  for (const auto& s : shapes) broadcast_into(acc, Shape(s.begin() + 1, s.end()));
  Shape out{common_batch(shapes)};
  out.insert(out.end(), acc.begin(), acc.end());
  return {out};
}

std::vector<DType> MergeImpl::compute_output_dtype(const std::vector<DType>& dtypes) {
  check_same_dtypes(dtypes);
  return {dtypes.empty() ? DType::float32 : dtypes[0]};
}

TensorList MergeImpl::call(const TensorList& inputs, const CallContext& ctx) {
  std::vector<DType> dtypes;
  int max_rank = 0;
  for (const auto& x : inputs) {
    dtypes.push_back(x.dtype());
    max_rank = std::max(max_rank, x.rank());
  }
  check_same_dtypes(dtypes);
  // Keras aligns ranks by inserting axes after the batch axis, so keras::ops broadcasting (which
  // aligns trailing axes) keeps the batch axes together.
  TensorList aligned;
  aligned.reserve(inputs.size());
  for (const auto& x : inputs) {
    Tensor y = x;
    while (y.rank() < max_rank) y = ops::expand_dims(y, 1);
    aligned.push_back(y);
  }
  return {ctx.masks.empty() ? merge_function(aligned) : merge_with_masks(aligned, ctx.masks)};
}

TensorList MergeImpl::compute_mask(const TensorList&, const TensorList& masks) const {
  Tensor out;
  for (const auto& m : masks) {
    if (!m.defined()) return {Tensor()};
    out = out.defined() ? masks::logical_or(out, m) : m;
  }
  return {out};
}

}  // namespace keras::layers
