// CUDA kernels of the elementwise activation ops (definitions: backend/ops_activation.cpp) and
// their `<name>_grad` ops, which take (grad, s) with s the forward output y for sigmoid, tanh and
// exponential and the input x for the rest. relu and relu_grad are in elementwise_ops.cpp.
// Attrs as on the CPU: leaky_relu "alpha" (default 0.2), elu "alpha" (default 1.0), gelu
// "approximate" (default false: the erf form). Inputs are float32 or float64 (the shape
// functions reject the rest; the check here repeats the CPU kernel's message for direct calls).
#include <string>

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
using k::Activation;


void forward(Activation a, const char* name, const TensorList& in, TensorList& out, double alpha) {
  require_float(in[0], "activation kernel");
  DeviceGuard guard(in[0].device().index);
  k::activation_forward(a, in[0].dtype(), in[0].raw_data(), alpha, out[0].raw_data(), in[0].numel(),
                        cuda::stream(in[0].device().index));
  cuda::check_launch(name);
}

// in = (grad, s) of equal shape and dtype (checked by the op's shape function).
void backward(Activation a, const char* name, const TensorList& in, TensorList& out, double alpha) {
  require_float(in[0], "activation gradient kernel");
  DeviceGuard guard(in[0].device().index);
  k::activation_backward(a, in[0].dtype(), in[0].raw_data(), in[1].raw_data(), alpha, out[0].raw_data(),
                         in[0].numel(), cuda::stream(in[0].device().index));
  cuda::check_launch(name);
}

#define KERAS_CUDA_ACTIVATION(op, kind_expr, alpha_expr)                                            \
  KERAS_REGISTER_KERNEL(op, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) {        \
    forward(kind_expr, #op " (cuda)", in, out, alpha_expr);                                          \
  });                                                                                               \
  KERAS_REGISTER_KERNEL(op##_grad, cuda, [](const TensorList& in, TensorList& out, const Attrs& a) { \
    backward(kind_expr, #op "_grad (cuda)", in, out, alpha_expr);                                    \
  })

KERAS_CUDA_ACTIVATION(leaky_relu, Activation::leaky_relu, a.get_float("alpha", 0.2));
KERAS_CUDA_ACTIVATION(relu6, Activation::relu6, 0.0);
KERAS_CUDA_ACTIVATION(elu, Activation::elu, a.get_float("alpha", 1.0));
KERAS_CUDA_ACTIVATION(selu, Activation::selu, 0.0);
KERAS_CUDA_ACTIVATION(gelu, a.get_bool("approximate", false) ? Activation::gelu_tanh : Activation::gelu_erf, 0.0);
KERAS_CUDA_ACTIVATION(sigmoid, Activation::sigmoid, 0.0);
KERAS_CUDA_ACTIVATION(hard_sigmoid, Activation::hard_sigmoid, 0.0);
KERAS_CUDA_ACTIVATION(hard_silu, Activation::hard_silu, 0.0);
KERAS_CUDA_ACTIVATION(tanh, Activation::tanh, 0.0);
KERAS_CUDA_ACTIVATION(softplus, Activation::softplus, 0.0);
KERAS_CUDA_ACTIVATION(softsign, Activation::softsign, 0.0);
KERAS_CUDA_ACTIVATION(silu, Activation::silu, 0.0);
KERAS_CUDA_ACTIVATION(exponential, Activation::exponential, 0.0);
#undef KERAS_CUDA_ACTIVATION

}  // namespace
}  // namespace keras
