// SeparableConv2D (keras.layers.SeparableConv2D): a depthwise convolution (strides, padding,
// dilation) followed by a 1x1 pointwise convolution with bias and activation.
#pragma once
#include "layers/conv_options.h"
#include "layers/layer_handle.h"

namespace keras::layers {

// The config of SeparableConv2D (Keras keys, order and defaults).
struct SeparableConv2DOptions {
  int64_t filters = 0;  // required, >= 1
  PairArg kernel_size;  // required
  PairArg strides = 1;
  std::string padding = "valid";
  std::string data_format = "channels_last";
  PairArg dilation_rate = 1;
  int64_t depth_multiplier = 1;
  std::string activation = "linear";
  bool use_bias = true;
  InitializerArg depthwise_initializer = "glorot_uniform";
  InitializerArg pointwise_initializer = "glorot_uniform";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg depthwise_regularizer;
  RegularizerArg pointwise_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg depthwise_constraint;  // applied after each optimizer update
  ConstraintArg pointwise_constraint;
  ConstraintArg bias_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: depthwise_kernel (kh, kw, in, dm), pointwise_kernel (1, 1, in*dm, filters), bias
// (filters,). Input rank 4 with known channels; errors as DepthwiseConv2D.
class SeparableConv2DImpl : public Layer {
 public:
  explicit SeparableConv2DImpl(SeparableConv2DOptions options);
  std::string class_name() const override { return "SeparableConv2D"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const SeparableConv2DOptions& options() const { return options_; }
  const Variable& depthwise_kernel() const { return depthwise_; }
  const Variable& pointwise_kernel() const { return pointwise_; }
  const Variable& bias() const { return bias_; }

 private:
  SeparableConv2DOptions options_;
  Variable depthwise_, pointwise_, bias_;
};
KERAS_LAYER_HANDLE(SeparableConv2D, SeparableConv2DOptions);

SeparableConv2DOptions separable_conv2d_options_from_config(const json& config);

}  // namespace keras::layers
