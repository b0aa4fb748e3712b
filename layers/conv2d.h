// Conv2D (keras.layers.Conv2D): 2-D convolution over (batch, height, width, channels).
#pragma once
#include "layers/conv_base.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

// The config of Conv2D (Keras keys, order and defaults).
struct Conv2DOptions {
  int64_t filters = 0;   // required, >= 1, divisible by groups
  PairArg kernel_size;   // required
  PairArg strides = 1;
  std::string padding = "valid";  // "valid" or "same" (extra pad at bottom/right, as Keras/TF)
  std::string data_format = "channels_last";
  PairArg dilation_rate = 1;
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

// Weights: kernel (kh, kw, in/groups, filters), bias (filters,) when use_bias. Input rank 4 with
// known channels divisible by groups; a kernel larger than the padded input is a ShapeError
// naming the layer, the input shape and the kernel size. Bad options throw ValueError.
class Conv2DImpl : public Layer {
 public:
  explicit Conv2DImpl(Conv2DOptions options);
  std::string class_name() const override { return "Conv2D"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const Conv2DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  Conv2DOptions options_;
  Variable kernel_, bias_;
};
KERAS_LAYER_HANDLE(Conv2D, Conv2DOptions);

Conv2DOptions conv2d_options_from_config(const json& config);

}  // namespace keras::layers
