// Convolution ops (keras.ops.conv / conv_transpose / depthwise_conv), NHWC activations and Keras
// kernel layouts. Every op here runs through the op registry, so CUDA can plug in kernels:
//   conv2d                   x (N,H,W,C), kernel (kh,kw,C/groups,O), bias (O) -> (N,OH,OW,O)
//   conv2d_backward_data     dy (N,OH,OW,O), kernel [, bias (C)] -> dx (N,H,W,C) (+ bias)
//   conv2d_backward_weights  x, dy -> dkernel (kh,kw,C/groups,O) [, dbias (O)]
// The backward ops are differentiable too (each is linear in both inputs), so gradients of
// gradients and float64 gradient checks of the backward ops work.
// conv1d, conv2d_transpose and depthwise_conv2d are compositions of the three ops
// (conv2d_transpose is conv2d_backward_data with its bias fused).
//
// Errors: ShapeError naming the op and the shapes (rank, channels not divisible by groups, kernel
// larger than the padded input), TypeError for non-float or mixed dtypes.
#pragma once
#include <array>
#include <optional>
#include <string>

#include "backend/op_registry.h"

namespace keras {

// Explicit geometry of one 2-D convolution: what every kernel sees. Pads are TF/Keras style
// (for "same" the extra pad goes to the bottom/right). Dilation 1 = none.
struct ConvParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t groups = 1;

  Attrs to_attrs() const;  // "strides", "dilation", "pads", "groups"
  static ConvParams from_attrs(const Attrs& attrs);
  std::string str() const;  // for error messages
};

namespace ops {

// ---- helpers shared by the ops and the layers (extent -1 = unknown stays -1) ----
// Output length of a convolution along one axis for Keras padding "valid", "same" or "causal".
int64_t conv_output_length(int64_t input, int64_t kernel, const std::string& padding, int64_t stride,
                           int64_t dilation);
// Output length of a transposed convolution (Keras deconv_output_length); output_padding -1 = None.
int64_t conv_transpose_output_length(int64_t input, int64_t kernel, const std::string& padding,
                                     int64_t output_padding, int64_t stride, int64_t dilation);
// (before, after) pads of Keras padding along one axis: "same" puts the odd pad after, "causal"
// pads only before. ValueError for an unknown padding.
std::pair<int64_t, int64_t> conv_pads(int64_t input, int64_t kernel, const std::string& padding, int64_t stride,
                                      int64_t dilation);

// ---- the registered ops, explicit geometry ----
// bias may be undefined. `activation` is fused into the kernel (oneDNN post-op) when it is
// differentiable from the output (linear, relu, sigmoid, tanh, elu) or when no gradient is
// recorded (gelu, swish, relu6); any other Keras activation runs after the convolution.
// oneDNN forward-training is used while a gradient is being recorded, forward-inference otherwise.
Tensor conv2d_explicit(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& params,
                       const std::string& activation = "linear");
// Gradient of conv2d w.r.t. its input: dx of shape input_shape (N,H,W,C).
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& kernel, const Shape& input_shape, const ConvParams& params);
// Gradient of conv2d w.r.t. its kernel (of kernel_shape) and, when with_bias, its bias:
// returns {dkernel} or {dkernel, dbias}.
TensorList conv2d_backward_weights(const Tensor& x, const Tensor& dy, const Shape& kernel_shape,
                                   const ConvParams& params, bool with_bias);

// ---- Keras-style convenience forms ----
struct Conv2DArgs {
  std::array<int64_t, 2> strides{1, 1};
  std::string padding = "valid";  // "valid" or "same"
  std::array<int64_t, 2> dilation_rate{1, 1};
  int64_t groups = 1;
  std::string activation = "linear";
};
// The explicit geometry conv2d uses for x (N,H,W,C) and kernel (kh,kw,C/groups,O): strides,
// dilation, groups and the pads of Keras's padding (ValueError for an unknown padding).
ConvParams conv2d_params(const Shape& x, const Shape& kernel, const Conv2DArgs& args);
// x (N,H,W,C), kernel (kh,kw,C/groups,O), bias (O) or undefined.
Tensor conv2d(const Tensor& x, const Tensor& kernel, const Tensor& bias = {}, const Conv2DArgs& args = {});

struct Conv1DArgs {
  int64_t strides = 1;
  std::string padding = "valid";  // "valid", "same" or "causal"
  int64_t dilation_rate = 1;
  int64_t groups = 1;
  std::string activation = "linear";
};
// x (N,L,C), kernel (k,C/groups,O): conv2d on a height-1 view.
Tensor conv1d(const Tensor& x, const Tensor& kernel, const Tensor& bias = {}, const Conv1DArgs& args = {});

struct Conv2DTransposeArgs {
  std::array<int64_t, 2> strides{1, 1};
  std::string padding = "valid";
  std::optional<std::array<int64_t, 2>> output_padding;  // each < its stride
  std::array<int64_t, 2> dilation_rate{1, 1};
  std::string activation = "linear";
};
// x (N,H,W,C), kernel (kh,kw,O,C) (Keras Conv2DTranspose layout) -> (N,OH,OW,O) with the output
// size of Keras/TF; computed as the backward-data of the matching forward convolution.
Tensor conv2d_transpose(const Tensor& x, const Tensor& kernel, const Tensor& bias = {},
                        const Conv2DTransposeArgs& args = {});

struct DepthwiseConv2DArgs {
  std::array<int64_t, 2> strides{1, 1};
  std::string padding = "valid";
  std::array<int64_t, 2> dilation_rate{1, 1};
  std::string activation = "linear";
};
// x (N,H,W,C), kernel (kh,kw,C,depth_multiplier) -> (N,OH,OW,C*dm), output channel c*dm + m:
// a grouped conv2d with groups = C.
Tensor depthwise_conv2d(const Tensor& x, const Tensor& kernel, const Tensor& bias = {},
                        const DepthwiseConv2DArgs& args = {});

}  // namespace ops
}  // namespace keras
