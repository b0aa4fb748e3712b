// DepthwiseConv2D (keras.layers.DepthwiseConv2D): each input channel convolved with its own
// depth_multiplier filters; output channel c*depth_multiplier + m.
#pragma once
#include "layers/conv_options.h"
#include "layers/layer_handle.h"

namespace keras::layers {

// The config of DepthwiseConv2D (Keras keys, order and defaults).
struct DepthwiseConv2DOptions {
  PairArg kernel_size;  // required
  PairArg strides = 1;
  std::string padding = "valid";
  int64_t depth_multiplier = 1;
  std::string data_format = "channels_last";
  PairArg dilation_rate = 1;
  std::string activation = "linear";
  bool use_bias = true;
  InitializerArg depthwise_initializer = "glorot_uniform";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg depthwise_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg depthwise_constraint;  // applied after each optimizer update
  ConstraintArg bias_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: kernel (kh, kw, in, depth_multiplier) (Keras 3 name "kernel"; Keras 2 files call it
// depthwise_kernel), bias (in * depth_multiplier,). Input rank 4 with known channels; a kernel
// larger than the padded input is a ShapeError naming the layer and the shapes.
class DepthwiseConv2DImpl : public Layer {
 public:
  explicit DepthwiseConv2DImpl(DepthwiseConv2DOptions options);
  std::string class_name() const override { return "DepthwiseConv2D"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const DepthwiseConv2DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  DepthwiseConv2DOptions options_;
  Variable kernel_, bias_;
};
KERAS_LAYER_HANDLE(DepthwiseConv2D, DepthwiseConv2DOptions);

DepthwiseConv2DOptions depthwise_conv2d_options_from_config(const json& config);

}  // namespace keras::layers
