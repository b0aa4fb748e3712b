// Cropping2D (keras.layers.Cropping2D): removes rows/columns at the borders of NHWC images.
// Config: cropping ((top, bottom), (left, right)), data_format. Cropping everything away is a
// ShapeError naming the layer, the cropping and the input shape.
#pragma once
#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct Cropping2DOptions {
  Padding2DArg cropping = 0;  // non-negative
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class Cropping2DImpl : public Layer {
 public:
  explicit Cropping2DImpl(Cropping2DOptions options);
  std::string class_name() const override { return "Cropping2D"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const Cropping2DOptions& options() const { return options_; }

 private:
  Cropping2DOptions options_;
};
KERAS_LAYER_HANDLE(Cropping2D, Cropping2DOptions);

Cropping2DOptions cropping2d_options_from_config(const json& config);

}  // namespace keras::layers
