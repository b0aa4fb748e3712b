// RandomRotation (keras.layers.RandomRotation): rotates images by random angles while training.
// Config: factor, fill_mode, fill_value, interpolation, seed, data_format.
#pragma once
#include <optional>

#include "layers/augment_args.h"
#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct RandomRotationOptions {
  FactorArg factor;                        // fraction of 2*pi: v -> [-v, v], (a, b) -> [a, b]; within [-1, 1]
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  std::optional<int64_t> seed;             // seeds the layer's stream; unset: global stream
  double fill_value = 0.0;                 // for fill_mode "constant"
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Training: one angle per image, uniform in [lower * 360, upper * 360) degrees, turning the image
// counter-clockwise about its centre ((W - 1) / 2, (H - 1) / 2) for positive angles, through
// ops::affine_transform with Keras 3's matrix (BaseImagePreprocessingLayer._compute_affine_matrix).
// Inference: the input unchanged. No gradient flows through the rotated images (see
// ops::affine_transform). The config writes factor as Keras does: the pair [lower, upper].
class RandomRotationImpl : public ImagePreprocessingLayer {
 public:
  explicit RandomRotationImpl(RandomRotationOptions options);
  std::string class_name() const override { return "RandomRotation"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RandomRotationOptions& options() const { return options_; }

 private:
  RandomRotationOptions options_;
  std::pair<double, double> range_;
};
KERAS_LAYER_HANDLE(RandomRotation, RandomRotationOptions);

RandomRotationOptions random_rotation_options_from_config(const json& config);

// Keras 3's rotation matrix (a row for ops::affine_transform) for `degrees` about the centre of
// an (h, w) image.
std::array<float, 8> rotation_transform(double degrees, int64_t h, int64_t w);

}  // namespace keras::layers
