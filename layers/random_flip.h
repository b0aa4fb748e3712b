// RandomFlip (keras.layers.RandomFlip): flips images at random while training.
// Config: mode, seed, data_format.
#pragma once
#include <optional>

#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct RandomFlipOptions {
  std::string mode = "horizontal_and_vertical";  // "horizontal", "vertical" or "horizontal_and_vertical"
  std::optional<int64_t> seed;                   // seeds the layer's stream; unset: global stream
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Training: one uniform draw u per image; the image is flipped when u <= 0.5 (left-right for
// "horizontal", up-down for "vertical", BOTH for "horizontal_and_vertical": Keras 3 uses the
// same draw for both axes, so that mode either keeps an image or turns it by 180 degrees).
// Inference: the input unchanged. Differentiable in the input. ValueError for another mode
// (Keras 3 silently never flips then).
class RandomFlipImpl : public ImagePreprocessingLayer {
 public:
  explicit RandomFlipImpl(RandomFlipOptions options);
  std::string class_name() const override { return "RandomFlip"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RandomFlipOptions& options() const { return options_; }

 private:
  RandomFlipOptions options_;
};
KERAS_LAYER_HANDLE(RandomFlip, RandomFlipOptions);

RandomFlipOptions random_flip_options_from_config(const json& config);

// x (N, H, W, C) reversed along `axis` (1: up-down, 2: left-right); differentiable.
Tensor flip_images(const Tensor& x, int axis);

}  // namespace keras::layers
