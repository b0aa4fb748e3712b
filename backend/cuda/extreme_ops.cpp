// CUDA kernels of max, min, argmax, argmin, reduce_extreme_grad (the max/min gradient) and
// sum_squares_f64 (the clipnorm reduction), as backend/cpu/reduce_kernels.cpp and
// optimizers/update_ops.cpp: max/min over any dtype with NaN winning; argmax/argmin keep the
// first NaN, else the first extreme; the gradient splits dy equally among ties and gives a NaN
// extreme no gradient; sum_squares_f64 accumulates in double. The op definitions validate axes,
// dtypes and empty reductions before these run.
#include <string>
#include <vector>

#include "backend/cpu/reference_linalg.h"
#include "backend/cuda/indexing.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda/scratch_pool.h"
#include "backend/cuda/shape_kernels.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::DeviceGuard;
namespace k = cuda::kernels;

// x's axes split into the kept ones (the outputs, row-major) and the reduced ones.
struct ReducePlan {
  k::Indexer kept, red;
  int64_t n_out = 1, n_red = 1;
};

ReducePlan plan_for(const Shape& shape, const std::vector<bool>& mask, const char* where) {
  Shape kept_ext, kept_st, red_ext, red_st;
  Shape st = contiguous_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    (mask[d] ? red_ext : kept_ext).push_back(shape[d]);
    (mask[d] ? red_st : kept_st).push_back(st[d]);
  }
  ReducePlan p;
  p.kept = cuda::make_indexers(kept_ext, {kept_st}, where)[0];
  p.red = cuda::make_indexers(red_ext, {red_st}, where)[0];
  p.n_out = shape_numel(kept_ext);
  p.n_red = shape_numel(red_ext);
  return p;
}

std::vector<bool> axes_mask(const Tensor& x, const Attrs& a, const char* op) {
  return cpu::reduced_axes_mask(x.rank(), a.has("axes") ? a.get_ints("axes") : std::vector<int64_t>{}, op);
}

void extreme_kernel(bool is_max, const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  const char* op = is_max ? "max" : "min";
  const char* where = is_max ? "max (cuda)" : "min (cuda)";
  if (y.numel() == 0) return;
  ReducePlan p = plan_for(x.shape(), axes_mask(x, a, op), where);
  DeviceGuard guard(x.device().index);
  cuda::ScratchPool pool(x.device());
  k::reduce_extreme(is_max, x.dtype(), x.raw_data(), p.kept, p.red, y.raw_data(), p.n_out, p.n_red, pool.fn(),
                    cuda::stream(x.device().index));
  cuda::check_launch(where);
}

void arg_kernel(bool is_max, const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  const char* op = is_max ? "argmax" : "argmin";
  const char* where = is_max ? "argmax (cuda)" : "argmin (cuda)";
  if (x.dtype() == DType::boolean) fail<TypeError>("argmax/argmin", "a numeric tensor", "bool");
  if (y.numel() == 0) return;
  const Shape& s = x.shape();
  const size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), x.rank(), op));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t r = s[axis];
  // The reduced index must be the position along the axis, so the axis is one Indexer axis.
  k::Indexer kept = cuda::make_indexers({outer, inner}, {{r * inner, 1}}, where)[0];
  k::Indexer red;
  red.rank = 1;
  red.ext[0] = r;
  red.stride[0] = inner;
  DeviceGuard guard(x.device().index);
  cuda::ScratchPool pool(x.device());
  k::arg_extreme(is_max, x.dtype(), x.raw_data(), kept, red, static_cast<int64_t*>(y.raw_data()), outer * inner, r,
                 pool.fn(), cuda::stream(x.device().index));
  cuda::check_launch(where);
}

// Inputs x, y = max/min(x) (keepdims or not: the same elements), dy of y's shape; attr "axes".
void extreme_grad_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Tensor& dx = out[0];
  const char* where = "reduce_extreme_grad (cuda)";
  if (dx.numel() == 0) return;
  if (!is_floating(x.dtype())) fail<TypeError>("gradient of max/min", "a float tensor", dtype_name(x.dtype()));
  auto mask = cpu::reduced_axes_mask(x.rank(), a.get_ints("axes"), "reduce_extreme_grad");
  ReducePlan p = plan_for(x.shape(), mask, where);
  // Element i of x -> its output: kept axes step through the outputs, reduced axes not at all.
  Shape kept;
  for (size_t d = 0; d < x.shape().size(); ++d)
    if (!mask[d]) kept.push_back(x.shape()[d]);
  Shape kept_st = contiguous_strides(kept), st(x.shape().size(), 0);
  for (size_t d = 0, j = 0; d < x.shape().size(); ++d)
    if (!mask[d]) st[d] = kept_st[j++];
  k::Indexer out_of = cuda::make_indexers(x.shape(), {st}, where)[0];
  DeviceGuard guard(x.device().index);
  cuda::ScratchPool pool(x.device());
  k::extreme_grad(x.dtype(), x.raw_data(), in[1].raw_data(), in[2].raw_data(), dx.raw_data(), p.kept, p.red, out_of,
                  p.n_out, p.n_red, x.numel(), pool.fn(), cuda::stream(x.device().index));
  cuda::check_launch(where);
}

void sum_squares_kernel(const TensorList& in, TensorList& out, const Attrs&) {
  const Tensor& x = in[0];
  const char* where = "sum_squares_f64 (cuda)";
  if (!is_floating(x.dtype())) fail<TypeError>("op 'sum_squares_f64'", "float32 or float64", dtype_name(x.dtype()));
  DeviceGuard guard(x.device().index);
  cuda::ScratchPool pool(x.device());
  k::sum_squares(x.dtype(), x.raw_data(), x.numel(), static_cast<double*>(out[0].raw_data()), pool.fn(),
                 cuda::stream(x.device().index));
  cuda::check_launch(where);
}

}  // namespace

KERAS_REGISTER_KERNEL(max, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  extreme_kernel(true, in, out, a);
});
KERAS_REGISTER_KERNEL(min, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  extreme_kernel(false, in, out, a);
});
KERAS_REGISTER_KERNEL(argmax, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  arg_kernel(true, in, out, a);
});
KERAS_REGISTER_KERNEL(argmin, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  arg_kernel(false, in, out, a);
});
KERAS_REGISTER_KERNEL(reduce_extreme_grad, cuda, extreme_grad_kernel);
KERAS_REGISTER_KERNEL(sum_squares_f64, cuda, sum_squares_kernel);

}  // namespace keras
