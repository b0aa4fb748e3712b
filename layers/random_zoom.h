// RandomZoom (keras.layers.RandomZoom): zooms images in or out at random while training.
// Config: height_factor, width_factor, fill_mode, interpolation, seed, fill_value, data_format.
#pragma once
#include <optional>

#include "layers/augment_args.h"
#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct RandomZoomOptions {
  FactorArg height_factor;                 // v -> [-v, v], (a, b) -> [a, b]; each in (-1, 1]
  std::optional<FactorArg> width_factor;   // unset: the height zoom is used for the width too
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  std::optional<int64_t> seed;
  double fill_value = 0.0;
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Training: per image, zh uniform in [1 + lower, 1 + upper) of height_factor, then zw of
// width_factor (or zw = zh); the output pixel (x, y) samples the input at
// (zw x + (W - 1) / 2 (1 - zw), zh y + (H - 1) / 2 (1 - zh)), so a positive factor zooms OUT
// (Keras 3's convention). Inference: the input unchanged. No gradient through the zoomed images.
// The config writes the factors as they were given (a number or a pair), as Keras does.
class RandomZoomImpl : public ImagePreprocessingLayer {
 public:
  explicit RandomZoomImpl(RandomZoomOptions options);
  std::string class_name() const override { return "RandomZoom"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RandomZoomOptions& options() const { return options_; }

 private:
  RandomZoomOptions options_;
  std::pair<double, double> height_range_, width_range_;
};
KERAS_LAYER_HANDLE(RandomZoom, RandomZoomOptions);

RandomZoomOptions random_zoom_options_from_config(const json& config);

}  // namespace keras::layers
