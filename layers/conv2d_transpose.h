// Conv2DTranspose (keras.layers.Conv2DTranspose): the transposed 2-D convolution (the gradient
// of Conv2D w.r.t. its input), with Keras/TF output sizes and output_padding.
#pragma once
#include <optional>

#include "layers/conv_options.h"
#include "layers/layer_handle.h"

namespace keras::layers {

// The config of Conv2DTranspose (Keras keys, order and defaults; output_padding null = None).
// Not a ConvOptions<2>: Keras orders output_padding after padding and has no groups here, and
// designated initialisers follow the member order.
struct Conv2DTransposeOptions {
  int64_t filters = 0;  // required, >= 1
  PairArg kernel_size;  // required
  PairArg strides = 1;
  std::string padding = "valid";
  std::optional<PairArg> output_padding;  // each extent in [0, stride)
  std::string data_format = "channels_last";
  PairArg dilation_rate = 1;
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
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: kernel (kh, kw, filters, in) (note: out before in, as Keras), bias (filters,).
// Input rank 4 with known channels (ShapeError naming the layer otherwise).
class Conv2DTransposeImpl : public Layer {
 public:
  explicit Conv2DTransposeImpl(Conv2DTransposeOptions options);
  std::string class_name() const override { return "Conv2DTranspose"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const Conv2DTransposeOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  Conv2DTransposeOptions options_;
  Variable kernel_, bias_;
};
KERAS_LAYER_HANDLE(Conv2DTranspose, Conv2DTransposeOptions);

Conv2DTransposeOptions conv2d_transpose_options_from_config(const json& config);

}  // namespace keras::layers
