// Plain-loop convolutions: the reference the oneDNN kernels are tested against, and the float64
// kernels themselves (oneDNN has no f64), so float64 gradient checks run through these loops.
//
// Naive on purpose: one index computation per multiply, accumulation in double, float32 or
// float64 in and the input dtype out. Shapes and geometry as in backend/ops_conv.h; the caller
// guarantees they are consistent (the op shape functions check them).
#pragma once
#include <string>

#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu {

// y = activation(conv(x, kernel) + bias); bias may be undefined; `activation` is linear, relu,
// sigmoid, tanh, elu, gelu (erf) or swish.
Tensor reference_conv2d(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& params,
                        const std::string& activation = "linear");
// dx (input_shape) of y = conv(x, kernel) given dy.
Tensor reference_conv2d_backward_data(const Tensor& dy, const Tensor& kernel, const Shape& input_shape,
                                      const ConvParams& params);
// dkernel (kernel_shape) of y = conv(x, kernel) given dy.
Tensor reference_conv2d_backward_weights(const Tensor& x, const Tensor& dy, const Shape& kernel_shape,
                                         const ConvParams& params);

// The same loops writing into pre-allocated contiguous outputs (the float64 CPU kernels).
void conv2d_loop(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& params,
                 const std::string& activation, Tensor& y);
void conv2d_backward_data_loop(const Tensor& dy, const Tensor& kernel, const ConvParams& params, Tensor& dx);
void conv2d_backward_weights_loop(const Tensor& x, const Tensor& dy, const ConvParams& params, Tensor& dkernel);

}  // namespace keras::cpu
