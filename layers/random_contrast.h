// RandomContrast (keras.layers.RandomContrast): scales each image's deviation from its mean at
// random while training. Config: factor, value_range, seed, data_format.
#pragma once
#include <optional>

#include "layers/augment_args.h"
#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct RandomContrastOptions {
  FactorArg factor;                 // in [0, 1]: v -> (lower, upper) = (0, v) (Keras 3's bounds clip -v to 0);
                                    // a pair (a, b) -> (a, b)
  ValueRange value_range = {0, 255};  // outputs are clipped into it (Keras does not sort it)
  std::optional<int64_t> seed;
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Training: per image f uniform in [1 - lower, 1 + upper); y = clip((x - m) * f + m, value_range)
// with m the image's mean over height and width (per channel). Inference: the input unchanged.
// Differentiable in the input. The config writes factor as the pair (lower, upper), as Keras.
class RandomContrastImpl : public ImagePreprocessingLayer {
 public:
  explicit RandomContrastImpl(RandomContrastOptions options);
  std::string class_name() const override { return "RandomContrast"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RandomContrastOptions& options() const { return options_; }

 private:
  RandomContrastOptions options_;
  std::pair<double, double> range_;
};
KERAS_LAYER_HANDLE(RandomContrast, RandomContrastOptions);

RandomContrastOptions random_contrast_options_from_config(const json& config);

}  // namespace keras::layers
