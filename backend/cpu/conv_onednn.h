// oneDNN's float32 (and bfloat16) convolutions on NHWC tensors with Keras-layout kernels: the `onednn_direct`
// and `onednn_winograd` candidates of conv_choice.h, as plain functions of an algorithm.
//
// Activations stay NHWC where the primitive takes it (convolution_direct); Winograd takes only
// oneDNN's blocked nChw16c, so its inputs and outputs go through reorders, which its timing then
// includes. Weights go to the primitive's preferred layout once per tensor version (the weight
// cache of weight_cache.h). Primitives and reorders are cached in cpu::primitive_cache() under a
// key of every parameter, the algorithm included.
#pragma once
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu {

struct ConvProblem {
  Shape x, k, y;  // NHWC input, Keras kernel (kh, kw, in/groups, out), NHWC output
  ConvParams p;
  // Of every tensor of the problem: f32, or bf16 (bfloat16 kernels, convolution_direct only;
  // oneDNN accumulates in float32).
  dnnl::memory::data_type dtype = dnnl::memory::data_type::f32;
};

// The kernel chooser's key of a problem (conv_choice.h): the direction ("forward", "forward_add",
// "backward_data", "backward_weights"), shapes, geometry, dtype, activation, bias and propagation
// kind ("training", "inference", "backward"): every parameter that can change which kernel is
// fastest.
std::string conv_choice_key(const std::string& direction, const ConvProblem& pr, const std::string& act, bool bias,
                            const std::string& prop);

// True when oneDNN creates the primitive for the problem (its creation, tried once per key, did
// not throw). Always true for convolution_direct on a valid float32 problem.
bool onednn_conv_forward_offered(const ConvProblem& pr, bool with_bias, const std::string& act, bool training,
                                 dnnl::algorithm alg, bool with_residual = false);
bool onednn_conv_backward_data_offered(const ConvProblem& pr, dnnl::algorithm alg);
bool onednn_conv_backward_weights_offered(const ConvProblem& pr, bool with_bias, dnnl::algorithm alg);

// y = act(conv(x, k) + bias [+ residual]) (bias and residual may be null; a residual, NHWC of
// y's shape, is a binary post-op before the activation; act: linear or a oneDNN-fusable
// activation, else ValueError); `training` selects forward_training. NotImplementedError naming
// the key when oneDNN has no primitive (precondition, except for the plain direct algorithm:
// onednn_conv_forward_offered).
void onednn_conv_forward(const Tensor& x, const Tensor& k, const Tensor* bias, Tensor& y, const ConvProblem& pr,
                         const std::string& act, bool training, dnnl::algorithm alg, const Tensor* residual = nullptr);
// dx = the input gradient of conv given dy (dx overwritten).
void onednn_conv_backward_data(const Tensor& dy, const Tensor& k, Tensor& dx, const ConvProblem& pr,
                               dnnl::algorithm alg);
// out[0] = dkernel (Keras layout), out[1] = dbias when present (both overwritten).
void onednn_conv_backward_weights(const Tensor& x, const Tensor& dy, TensorList& out, const ConvProblem& pr,
                                  dnnl::algorithm alg);

}  // namespace keras::cpu
