// CUDA kernels of the softmax family (definitions: backend/ops_activation.cpp and
// backend/ops_attention.cpp; CPU kernels: backend/cpu/activation_kernels.cpp and
// backend/cpu/attention_kernels.cpp):
//   softmax(x), log_softmax(x) -> y                 attr axis (default -1, may be negative)
//   softmax_grad(grad, y), log_softmax_grad(grad, y) -> dx
//   masked_softmax(x, mask) -> y                    last axis; attrs fill ("replace" | "subtract"),
//   masked_softmax_grad(grad, x, mask) -> dx        zero_masked
// Inputs arrive contiguous (the mask already broadcast to x's shape), outputs pre-allocated; the
// shape functions have rejected non-float scores, non-bool masks and mismatched shapes.
#include <string>

#include "backend/cuda/runtime.h"
#include "backend/cuda/softmax_kernels.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

namespace k = cuda::kernels;

struct Split {
  int64_t outer = 1, len = 1, inner = 1;
};

// (outer, len, inner) around the attr axis; ValueError naming the kernel for an axis out of range,
// as the CPU kernel.
Split split_at_axis(const Tensor& t, const Attrs& a) {
  const int axis = normalize_axis(a.get_int("axis", -1), t.rank(), "softmax kernel");
  Split s;
  for (int i = 0; i < static_cast<int>(t.rank()); ++i) {
    const int64_t e = t.shape()[i];
    if (i < axis) s.outer *= e;
    else if (i == axis) s.len = e;
    else s.inner *= e;
  }
  return s;
}

void softmax_forward(const TensorList& in, TensorList& out, const Attrs& a, bool log, const char* where) {
  const Tensor& x = in[0];
  const Split s = split_at_axis(x, a);
  if (x.numel() == 0) return;
  cuda::DeviceGuard guard(x.device().index);
  k::softmax_forward(x.dtype(), x.raw_data(), out[0].raw_data(), s.outer, s.len, s.inner, log,
                     cuda::stream(x.device().index));
  cuda::check_launch(where);
}

void softmax_backward(const TensorList& in, TensorList& out, const Attrs& a, bool log, const char* where) {
  const Tensor &grad = in[0], &y = in[1];
  const Split s = split_at_axis(y, a);
  if (y.numel() == 0) return;
  cuda::DeviceGuard guard(y.device().index);
  k::softmax_backward(y.dtype(), grad.raw_data(), y.raw_data(), out[0].raw_data(), s.outer, s.len, s.inner, log,
                      cuda::stream(y.device().index));
  cuda::check_launch(where);
}

struct FillMode {
  bool subtract = false, zero_masked = false;
};

// Same attrs and errors as the CPU kernel's fill_mode.
FillMode fill_mode(const Attrs& a) {
  const std::string& fill = a.get_string("fill");
  if (fill != "replace" && fill != "subtract")
    fail<ValueError>("masked_softmax kernel attr 'fill'", "'replace' or 'subtract'", "'" + fill + "'");
  return {fill == "subtract", a.get_bool("zero_masked")};
}

// Rows of the last axis; 0 rows for an empty tensor or an empty last axis.
int64_t rows_of(const Tensor& x, int64_t len) { return len == 0 ? 0 : x.numel() / len; }

void masked_softmax_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  const FillMode m = fill_mode(a);
  const Tensor &x = in[0], &mask = in[1];
  const int64_t len = x.shape().back();
  if (x.numel() == 0) return;
  cuda::DeviceGuard guard(x.device().index);
  k::masked_softmax_forward(x.dtype(), x.raw_data(), static_cast<const bool*>(mask.raw_data()), out[0].raw_data(),
                            rows_of(x, len), len, m.subtract, m.zero_masked, cuda::stream(x.device().index));
  cuda::check_launch("masked_softmax (cuda)");
}

void masked_softmax_grad_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  const FillMode m = fill_mode(a);
  const Tensor &grad = in[0], &x = in[1], &mask = in[2];
  const int64_t len = x.shape().back();
  if (x.numel() == 0) return;
  cuda::DeviceGuard guard(x.device().index);
  k::masked_softmax_backward(x.dtype(), grad.raw_data(), x.raw_data(), static_cast<const bool*>(mask.raw_data()),
                             out[0].raw_data(), rows_of(x, len), len, m.subtract, m.zero_masked,
                             cuda::stream(x.device().index));
  cuda::check_launch("masked_softmax_grad (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(softmax, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  softmax_forward(in, out, a, false, "softmax (cuda)");
});
KERAS_REGISTER_KERNEL(softmax_grad, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  softmax_backward(in, out, a, false, "softmax_grad (cuda)");
});
KERAS_REGISTER_KERNEL(log_softmax, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  softmax_forward(in, out, a, true, "log_softmax (cuda)");
});
KERAS_REGISTER_KERNEL(log_softmax_grad, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  softmax_backward(in, out, a, true, "log_softmax_grad (cuda)");
});
KERAS_REGISTER_KERNEL(masked_softmax, cuda, masked_softmax_cuda);
KERAS_REGISTER_KERNEL(masked_softmax_grad, cuda, masked_softmax_grad_cuda);

}  // namespace keras
