// Conv1D (keras.layers.Conv1D): 1-D convolution over (batch, steps, channels), computed as a
// Conv2D on a height-1 view.
#pragma once
#include "layers/conv_options.h"
#include "layers/layer_handle.h"

namespace keras::layers {

// The config of Conv1D: kernel_size/strides/dilation_rate are one int each, written as
// 1-element lists as Keras does; padding may also be "causal" (left padding only).
using Conv1DOptions = ConvOptions<1>;

// Weights: kernel (k, in/groups, filters), bias (filters,). Input rank 3 with known channels
// divisible by groups; errors as Conv2D.
class Conv1DImpl : public Layer {
 public:
  explicit Conv1DImpl(Conv1DOptions options);
  std::string class_name() const override { return "Conv1D"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const Conv1DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  Conv1DOptions options_;
  Variable kernel_, bias_;
};
KERAS_LAYER_HANDLE(Conv1D, Conv1DOptions);

Conv1DOptions conv1d_options_from_config(const json& config);

}  // namespace keras::layers
