// Conv2D (keras.layers.Conv2D): 2-D convolution over (batch, height, width, channels).
#pragma once
#include "layers/conv_options.h"
#include "layers/layer_handle.h"

namespace keras::layers {

// The config of Conv2D (Keras keys, order and defaults): sizes are PairArg (an int sets both).
using Conv2DOptions = ConvOptions<2>;

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
