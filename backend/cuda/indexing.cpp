#include "backend/cuda/indexing.h"

#include <string>

#include "backend/errors.h"

namespace keras::cuda {

Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape contiguous = contiguous_strides(in);
  Shape s(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    s[lead + i] = (in[i] == 1 && out[lead + i] != 1) ? 0 : contiguous[i];
  return s;
}

std::vector<kernels::Indexer> make_indexers(const Shape& shape, const std::vector<Shape>& strides, const char* where) {
  // Drop extent-1 axes (they move no offset), then merge axis i into i+1 when, for every
  // operand, stepping i equals stepping over all of i+1.
  Shape ext;
  std::vector<Shape> st(strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    ext.push_back(shape[d]);
    for (size_t k = 0; k < strides.size(); ++k) st[k].push_back(strides[k][d]);
  }
  for (size_t d = ext.size(); d-- > 1;) {
    bool mergeable = true;
    for (const auto& s : st) mergeable = mergeable && s[d - 1] == s[d] * ext[d];
    if (!mergeable) continue;
    ext[d - 1] *= ext[d];
    ext.erase(ext.begin() + static_cast<std::ptrdiff_t>(d));
    for (auto& s : st) {
      s[d - 1] = s[d];
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
    }
  }
  if (ext.size() > static_cast<size_t>(kernels::kMaxRank))
    fail<NotImplementedError>(where, "at most " + std::to_string(kernels::kMaxRank) + " non-mergeable axes",
                              std::to_string(ext.size()) + " axes (shape " + shape_str(shape) + ")",
                              "The CUDA kernels index up to 8 axes; reshape first.");
  std::vector<kernels::Indexer> out(strides.size());
  for (size_t k = 0; k < strides.size(); ++k) {
    out[k].rank = static_cast<int>(ext.size());
    for (size_t d = 0; d < ext.size(); ++d) {
      out[k].ext[d] = ext[d];
      out[k].stride[d] = st[k][d];
    }
  }
  return out;
}

std::vector<kernels::Indexer> broadcast_indexers(const Shape& out, const std::vector<Shape>& operands, const char* where) {
  std::vector<Shape> strides;
  strides.reserve(operands.size());
  for (const Shape& s : operands) strides.push_back(broadcast_strides(s, out));
  return make_indexers(out, strides, where);
}

}  // namespace keras::cuda
