// Conv1D (keras.layers.Conv1D): 1-D convolution over (batch, steps, channels), computed as a
// Conv2D on a height-1 view.
#pragma once
#include "layers/conv_base.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

// The config of Conv1D (Keras keys and defaults; kernel_size/strides/dilation_rate are written
// as 1-element lists, as Keras does).
struct Conv1DOptions {
  int64_t filters = 0;      // required, >= 1, divisible by groups
  int64_t kernel_size = 0;  // required
  int64_t strides = 1;
  std::string padding = "valid";  // "valid", "same" or "causal" (left padding only)
  std::string data_format = "channels_last";
  int64_t dilation_rate = 1;
  int64_t groups = 1;
  std::string activation = "linear";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg kernel_constraint;  // applied after each optimizer update
  ConstraintArg bias_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype = "float32";
};

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
