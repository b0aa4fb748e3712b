// CUDA kernels of the elementwise maths ops defined in backend/ops_elementwise.cpp: abs, sign,
// square, exp, log, sqrt, pow_scalar, clip; maximum, minimum, pow and the six comparisons with
// NumPy broadcasting (as add in elementwise_ops.cpp); where (three broadcast operands);
// broadcast_to; cast. The shape functions have already checked dtypes and shapes and run_op has
// allocated the outputs; the dtype checks here only guard against a call that bypasses them,
// with the CPU kernels' messages. Semantics are the CPU kernels' (backend/cpu/elementwise_kernels.cpp).
#include <string>

#include "backend/cuda/indexing.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/math_kernels.h"
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



// Indexers of `operands` broadcast into `out`'s shape.
// ---- unary ----

void unary_math(k::MathUnary op, const char* name, bool float_only, const TensorList& in, TensorList& out,
                double p0 = 0, double p1 = 0) {
  require_numeric(in[0], name);
  if (float_only) require_float(in[0], name);
  DeviceGuard guard(in[0].device().index);
  k::math_unary(op, in[0].dtype(), in[0].raw_data(), p0, p1, out[0].raw_data(), in[0].numel(), stream_of(in[0]));
  cuda::check_launch(name);
}

#define KERAS_CUDA_MATH_UNARY(name, float_only)                                               \
  KERAS_REGISTER_KERNEL(name, cuda, [](const TensorList& in, TensorList& out, const Attrs&) { \
    unary_math(k::MathUnary::name, #name, float_only, in, out);                                \
  })
KERAS_CUDA_MATH_UNARY(abs, false);
KERAS_CUDA_MATH_UNARY(sign, false);
KERAS_CUDA_MATH_UNARY(square, false);
KERAS_CUDA_MATH_UNARY(exp, true);
KERAS_CUDA_MATH_UNARY(log, true);
KERAS_CUDA_MATH_UNARY(sqrt, true);
#undef KERAS_CUDA_MATH_UNARY

// x ^ value; the exponent is converted to x's dtype in the kernel launcher, as on the CPU.
KERAS_REGISTER_KERNEL(pow_scalar, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  unary_math(k::MathUnary::pow_scalar, "pow_scalar", false, in, out, a.get_float("value"));
});

KERAS_REGISTER_KERNEL(clip, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {
  unary_math(k::MathUnary::clip, "clip", false, in, out, a.get_float("min"), a.get_float("max"));
});

// ---- binary, with broadcasting ----

void binary_math(k::MathBinary op, const char* name, const TensorList& in, TensorList& out) {
  require_numeric(in[0], name);
  Tensor& c = out[0];
  DeviceGuard guard(c.device().index);
  auto ix = cuda::broadcast_indexers(c.shape(), {in[0].shape(), in[1].shape()}, name);
  k::math_binary(op, in[0].dtype(), in[0].raw_data(), ix[0], in[1].raw_data(), ix[1], c.raw_data(), c.numel(),
                 stream_of(c));
  cuda::check_launch(name);
}

#define KERAS_CUDA_MATH_BINARY(name)                                                          \
  KERAS_REGISTER_KERNEL(name, cuda, [](const TensorList& in, TensorList& out, const Attrs&) { \
    binary_math(k::MathBinary::name, #name " (cuda)", in, out);                                \
  })
KERAS_CUDA_MATH_BINARY(maximum);
KERAS_CUDA_MATH_BINARY(minimum);
KERAS_CUDA_MATH_BINARY(pow);
#undef KERAS_CUDA_MATH_BINARY

// Any dtype (bool included) in, bool out.
void compare(k::Compare op, const char* name, const TensorList& in, TensorList& out) {
  Tensor& c = out[0];
  DeviceGuard guard(c.device().index);
  auto ix = cuda::broadcast_indexers(c.shape(), {in[0].shape(), in[1].shape()}, name);
  k::compare(op, in[0].dtype(), in[0].raw_data(), ix[0], in[1].raw_data(), ix[1], static_cast<bool*>(c.raw_data()),
             c.numel(), stream_of(c));
  cuda::check_launch(name);
}

#define KERAS_CUDA_COMPARE(name)                                                              \
  KERAS_REGISTER_KERNEL(name, cuda, [](const TensorList& in, TensorList& out, const Attrs&) { \
    compare(k::Compare::name, #name " (cuda)", in, out);                                       \
  })
KERAS_CUDA_COMPARE(equal);
KERAS_CUDA_COMPARE(not_equal);
KERAS_CUDA_COMPARE(less);
KERAS_CUDA_COMPARE(less_equal);
KERAS_CUDA_COMPARE(greater);
KERAS_CUDA_COMPARE(greater_equal);
#undef KERAS_CUDA_COMPARE

// (cond, a, b) -> cond ? a : b, all three broadcast into the output.
KERAS_REGISTER_KERNEL(where, cuda, [](const TensorList& in, TensorList& out, const Attrs&) {
  if (in[0].dtype() != DType::boolean)
    fail<TypeError>("where (cuda kernel)", "a bool condition", dtype_name(in[0].dtype()));
  Tensor& o = out[0];
  DeviceGuard guard(o.device().index);
  auto ix = cuda::broadcast_indexers(o.shape(), {in[0].shape(), in[1].shape(), in[2].shape()}, "where (cuda)");
  k::where(in[1].dtype(), static_cast<const bool*>(in[0].raw_data()), ix[0], in[1].raw_data(), ix[1],
           in[2].raw_data(), ix[2], o.raw_data(), o.numel(), stream_of(o));
  cuda::check_launch("where (cuda)");
});

// ---- broadcast_to and cast ----

// A gather through the broadcast strides (0 on stretched axes): any dtype, by element size.
KERAS_REGISTER_KERNEL(broadcast_to, cuda, [](const TensorList& in, TensorList& out, const Attrs&) {
  Tensor& o = out[0];
  DeviceGuard guard(o.device().index);
  auto ix = cuda::broadcast_indexers(o.shape(), {in[0].shape()}, "broadcast_to (cuda)");
  k::gather(static_cast<int>(dtype_size(in[0].dtype())), in[0].raw_data(), ix[0], o.raw_data(), o.numel(),
            stream_of(o));
  cuda::check_launch("broadcast_to (cuda)");
});

// The conversion of astype (static_cast per element); cast is a separate op only for its gradient.
KERAS_REGISTER_KERNEL(cast, cuda, [](const TensorList& in, TensorList& out, const Attrs&) {
  DeviceGuard guard(in[0].device().index);
  k::astype(in[0].dtype(), out[0].dtype(), in[0].raw_data(), out[0].raw_data(), in[0].numel(), stream_of(in[0]));
  cuda::check_launch("cast (cuda)");
});

}  // namespace
}  // namespace keras
