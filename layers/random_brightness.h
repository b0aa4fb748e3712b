// RandomBrightness (keras.layers.RandomBrightness): adds a random offset to each image while
// training. Config: factor, value_range, seed, data_format.
#pragma once
#include <optional>

#include "layers/augment_args.h"
#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct RandomBrightnessOptions {
  FactorArg factor;                   // in [-1, 1]: v -> [-|v|, |v|], (a, b) -> [a, b]
  ValueRange value_range = {0, 255};  // sorted, as Keras sorts it
  std::optional<int64_t> seed;
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Training: per image d uniform in [lower, upper) times (max - min) of value_range;
// y = clip(x + d, min, max). Inference: the input unchanged. Differentiable in the input.
// The config writes factor as the pair (lower, upper) and value_range sorted, as Keras.
class RandomBrightnessImpl : public ImagePreprocessingLayer {
 public:
  explicit RandomBrightnessImpl(RandomBrightnessOptions options);
  std::string class_name() const override { return "RandomBrightness"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RandomBrightnessOptions& options() const { return options_; }

 private:
  RandomBrightnessOptions options_;
  std::pair<double, double> range_;
};
KERAS_LAYER_HANDLE(RandomBrightness, RandomBrightnessOptions);

RandomBrightnessOptions random_brightness_options_from_config(const json& config);

}  // namespace keras::layers
