// CUDA kernels of the memory ops (copy, astype, fill, assign), the arithmetic ops with
// broadcasting (add, subtract, multiply, divide, their scalar forms, negative), relu and its
// gradient, and the sums (sum, mean, sum_to_shape, reduce_broadcast_grad): the set a Dense
// layer's forward and backward passes and a mean-squared loss need. Ops without a kernel here
// fail in run_op with NotImplementedError naming the op and "cuda".
#include <limits>
#include <string>

#include "backend/cpu/reference_linalg.h"
#include "backend/cuda/indexing.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda/op_checks.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::require_float;
using cuda::require_numeric;
using cuda::stream_of;

using cuda::DeviceGuard;
namespace k = cuda::kernels;



// ---- memory ops ----

void copy_kernel(const TensorList& in, TensorList& out, const Attrs&) {
  const Tensor& src = in[0];
  DeviceGuard guard(src.device().index);
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), src.device());
  out = {dst};
  auto ix = cuda::make_indexers(src.shape(), {src.strides()}, "copy (cuda)");
  const char* base = static_cast<const char*>(src.impl().storage->data) +
                     src.impl().offset * static_cast<int64_t>(dtype_size(src.dtype()));
  k::gather(static_cast<int>(dtype_size(src.dtype())), base, ix[0], dst.raw_data(), dst.numel(), stream_of(src));
  cuda::check_launch("copy (cuda)");
}

// The launchers' dtype switches have no two-byte floats yet: refuse them rather than leave the
// output unwritten.
void reject_half(const char* where, DType t) {
  if (is_half(t))
    fail<NotImplementedError>(where, "float32, float64, int32, int64 or bool", dtype_name(t),
                              "Two-byte floats run on the CPU for now; GPU mixed precision is not written yet.");
}

void astype_kernel(const TensorList& in, TensorList& out, const Attrs&) {
  reject_half("astype (cuda)", in[0].dtype());
  reject_half("astype (cuda)", out[0].dtype());
  DeviceGuard guard(in[0].device().index);
  k::astype(in[0].dtype(), out[0].dtype(), in[0].raw_data(), out[0].raw_data(), in[0].numel(), stream_of(in[0]));
  cuda::check_launch("astype (cuda)");
}

void fill_kernel(const TensorList& in, TensorList&, const Attrs& a) {
  Tensor t = in[0];
  reject_half("fill (cuda)", t.dtype());
  DeviceGuard guard(t.device().index);
  k::fill(t.dtype(), t.raw_data(), t.numel(), a.get_float("value"), stream_of(t));
  cuda::check_launch("fill (cuda)");
}

void assign_kernel(const TensorList& in, TensorList&, const Attrs&) {
  Tensor dst = in[0];
  Tensor src = in[1].contiguous();
  if (dst.nbytes() == 0) return;
  DeviceGuard guard(dst.device().index);
  cuda::check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToDevice, stream_of(dst)),
              "assign (cuda)");
}

// ---- arithmetic ----

void binary_kernel(k::Binary op, const char* name, const TensorList& in, TensorList& out) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  Tensor& c = out[0];
  require_numeric(a, name);
  if (op == k::Binary::divide) require_float(a, name);
  DeviceGuard guard(c.device().index);
  auto ix = cuda::broadcast_indexers(c.shape(), {a.shape(), b.shape()}, name);
  k::binary(op, a.dtype(), a.raw_data(), ix[0], b.raw_data(), ix[1], c.raw_data(), c.numel(), stream_of(c));
  cuda::check_launch(name);
}

void unary_kernel(k::Unary op, const char* name, bool float_only, const TensorList& in, TensorList& out,
                  double s) {
  require_numeric(in[0], name);
  if (float_only) require_float(in[0], name);
  DeviceGuard guard(in[0].device().index);
  k::unary(op, in[0].dtype(), in[0].raw_data(), s, out[0].raw_data(), in[0].numel(), stream_of(in[0]));
  cuda::check_launch(name);
}

#define KERAS_CUDA_BINARY(name)                                                              \
  KERAS_REGISTER_KERNEL(name, cuda, [](const TensorList& in, TensorList& out, const Attrs&) { \
    binary_kernel(k::Binary::name, #name " (cuda)", in, out);                                 \
  })
KERAS_CUDA_BINARY(add);
KERAS_CUDA_BINARY(subtract);
KERAS_CUDA_BINARY(multiply);
KERAS_CUDA_BINARY(divide);

#define KERAS_CUDA_SCALAR(name, float_only)                                                          \
  KERAS_REGISTER_KERNEL(name, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {       \
    unary_kernel(k::Unary::name, #name " (cuda)", float_only, in, out, a.get_float("value"));         \
  })
KERAS_CUDA_SCALAR(add_scalar, false);
KERAS_CUDA_SCALAR(multiply_scalar, false);
KERAS_CUDA_SCALAR(divide_scalar, true);
KERAS_CUDA_SCALAR(rsubtract_scalar, false);
KERAS_CUDA_SCALAR(rdivide_scalar, true);

KERAS_REGISTER_KERNEL(negative, cuda, [](const TensorList& in, TensorList& out, const Attrs&) {
  unary_kernel(k::Unary::negative, "negative (cuda)", false, in, out, 0.0);
});
KERAS_REGISTER_KERNEL(relu, cuda, [](const TensorList& in, TensorList& out, const Attrs&) {
  unary_kernel(k::Unary::relu, "relu (cuda)", true, in, out, 0.0);
});
// (grad, y) -> grad where y > 0.
KERAS_REGISTER_KERNEL(relu_grad, cuda, [](const TensorList& in, TensorList& out, const Attrs&) {
  require_float(in[0], "relu_grad");
  DeviceGuard guard(in[0].device().index);
  k::activation_grad(k::Act::relu, in[0].dtype(), in[0].raw_data(), in[1].raw_data(), out[0].raw_data(),
                     in[0].numel(), stream_of(in[0]));
  cuda::check_launch("relu_grad (cuda)");
});

// ---- sums ----

// Sums x over the axes in `mask` into out (whose element order is that of the kept axes).
void sum_masked(const Tensor& x, const std::vector<bool>& mask, Tensor& out, double scale, const char* name) {
  require_numeric(x, name);
  Shape kept_ext, kept_st, red_ext, red_st;
  Shape st = contiguous_strides(x.shape());
  for (size_t d = 0; d < x.shape().size(); ++d) {
    (mask[d] ? red_ext : kept_ext).push_back(x.shape()[d]);
    (mask[d] ? red_st : kept_st).push_back(st[d]);
  }
  auto kept = cuda::make_indexers(kept_ext, {kept_st}, name);
  auto red = cuda::make_indexers(red_ext, {red_st}, name);
  DeviceGuard guard(x.device().index);
  const int64_t n_out = shape_numel(kept_ext), n_red = shape_numel(red_ext);
  k::ReducePlan plan = k::plan_reduce_sum(kept[0], n_out, n_red);
  Tensor scratch;
  if (int64_t bytes = plan.scratch_bytes(n_out)) scratch = Tensor::empty({bytes / 8}, DType::float64, x.device());
  k::reduce_sum(x.dtype(), x.raw_data(), kept[0], red[0], out.raw_data(), n_out, n_red, scale, plan,
                scratch.defined() ? scratch.raw_data() : nullptr, stream_of(x));
  cuda::check_launch(name);
}

std::vector<bool> axes_mask(const Tensor& x, const Attrs& a, const char* op) {
  return cpu::reduced_axes_mask(x.rank(), a.has("axes") ? a.get_ints("axes") : std::vector<int64_t>{}, op);
}

KERAS_REGISTER_KERNEL(sum, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  sum_masked(in[0], axes_mask(in[0], a, "sum"), out[0], 1.0, "sum (cuda)");
});

// As the CPU kernel: floating means divide by the count (NaN for an empty reduction).
KERAS_REGISTER_KERNEL(mean, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  double scale = 1.0;
  if (is_floating(in[0].dtype())) {
    int64_t count = out[0].numel() == 0 ? 1 : in[0].numel() / out[0].numel();
    scale = count == 0 ? std::numeric_limits<double>::quiet_NaN() : 1.0 / static_cast<double>(count);
  }
  sum_masked(in[0], axes_mask(in[0], a, "mean"), out[0], scale, "mean (cuda)");
});

// grad (the larger shape) summed into out's shape, which broadcasts to it.
KERAS_REGISTER_KERNEL(sum_to_shape, cuda, [](const TensorList& in, TensorList& out, const Attrs&) {
  const Shape& g = in[0].shape();
  const Shape& t = out[0].shape();
  std::vector<bool> mask(g.size(), false);
  size_t lead = g.size() - t.size();
  for (size_t d = 0; d < g.size(); ++d) mask[d] = d < lead || (t[d - lead] == 1 && g[d] != 1);
  sum_masked(in[0], mask, out[0], 1.0, "sum_to_shape (cuda)");
});

// dy (the reduced shape) broadcast back over the reduced axes of out, times "scale".
KERAS_REGISTER_KERNEL(reduce_broadcast_grad, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  Tensor& dx = out[0];
  const Tensor& dy = in[0];
  require_numeric(dy, "reduce_broadcast_grad");
  auto mask = cpu::reduced_axes_mask(dx.rank(), a.get_ints("axes"), "reduce_broadcast_grad");
  Shape kept;
  for (size_t d = 0; d < dx.shape().size(); ++d)
    if (!mask[d]) kept.push_back(dx.shape()[d]);
  Shape kept_st = contiguous_strides(kept), st(dx.shape().size(), 0);
  for (size_t d = 0, j = 0; d < dx.shape().size(); ++d)
    if (!mask[d]) st[d] = kept_st[j++];
  auto ix = cuda::make_indexers(dx.shape(), {st}, "reduce_broadcast_grad (cuda)");
  DeviceGuard guard(dx.device().index);
  k::gather(static_cast<int>(dtype_size(dy.dtype())), dy.raw_data(), ix[0], dx.raw_data(), dx.numel(), stream_of(dx));
  double scale = a.get_float("scale");
  if (scale != 1.0)
    k::unary(k::Unary::multiply_scalar, dx.dtype(), dx.raw_data(), scale, dx.raw_data(), dx.numel(), stream_of(dx));
  cuda::check_launch("reduce_broadcast_grad (cuda)");
});

}  // namespace

KERAS_REGISTER_KERNEL(copy, cuda, copy_kernel);
KERAS_REGISTER_KERNEL(astype, cuda, astype_kernel);
KERAS_REGISTER_KERNEL(fill, cuda, fill_kernel);
KERAS_REGISTER_KERNEL(assign, cuda, assign_kernel);

}  // namespace keras
