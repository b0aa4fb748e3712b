// UpSampling2D (keras.layers.UpSampling2D): repeats rows and columns of NHWC images by integer
// factors ("nearest"), or resizes to (H * size_h, W * size_w) with half-pixel bilinear
// interpolation ("bilinear", as Keras 3's ops.image.resize). Config: size, data_format,
// interpolation.
#pragma once
#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct UpSampling2DOptions {
  PairArg size = 2;                     // factors >= 1
  std::string data_format = "channels_last";
  std::string interpolation = "nearest";  // "nearest" or "bilinear" (ValueError otherwise)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class UpSampling2DImpl : public Layer {
 public:
  explicit UpSampling2DImpl(UpSampling2DOptions options);
  std::string class_name() const override { return "UpSampling2D"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const UpSampling2DOptions& options() const { return options_; }

 private:
  UpSampling2DOptions options_;
};
KERAS_LAYER_HANDLE(UpSampling2D, UpSampling2DOptions);

UpSampling2DOptions up_sampling2d_options_from_config(const json& config);

}  // namespace keras::layers
