// RandomTranslation (keras.layers.RandomTranslation): shifts images at random while training.
// Config: height_factor, width_factor, fill_mode, interpolation, seed, fill_value, data_format.
#pragma once
#include <optional>

#include "layers/augment_args.h"
#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct RandomTranslationOptions {
  FactorArg height_factor;                 // fraction of the height: v -> [-v, v]; each in [-1, 1]
  FactorArg width_factor;                  // fraction of the width, alike
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  std::optional<int64_t> seed;
  double fill_value = 0.0;
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Training: per image, dy = uniform(lower, upper of height_factor) * H, then dx alike * W; the
// content moves down by dy and right by dx (output (x, y) samples the input at (x - dx, y - dy)).
// Inference: the input unchanged. No gradient through the shifted images. The config writes the
// factors as they were given, as Keras does.
class RandomTranslationImpl : public ImagePreprocessingLayer {
 public:
  explicit RandomTranslationImpl(RandomTranslationOptions options);
  std::string class_name() const override { return "RandomTranslation"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RandomTranslationOptions& options() const { return options_; }

 private:
  RandomTranslationOptions options_;
  std::pair<double, double> height_range_, width_range_;
};
KERAS_LAYER_HANDLE(RandomTranslation, RandomTranslationOptions);

RandomTranslationOptions random_translation_options_from_config(const json& config);

}  // namespace keras::layers
