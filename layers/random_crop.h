// RandomCrop (keras.layers.RandomCrop): a random (height, width) window of the batch while
// training. Config: height, width, seed, data_format.
#pragma once
#include <optional>

#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct RandomCropOptions {
  int64_t height = 0;                  // >= 1 (ValueError otherwise)
  int64_t width = 0;                   // >= 1
  std::optional<int64_t> seed;         // unset: drawn from the global generator at construction
                                       // (Keras's make_default_seed), so the config always has one
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Keras 3 semantics, including its surprises:
//  - training, image larger than the window in BOTH extents: one window for the whole batch,
//    top = int(uniform(0, H - height + 1)), left = int(uniform(0, W - width + 1));
//  - training otherwise: the centred window of the target aspect ratio, then (when that is not
//    (height, width), i.e. the image is smaller) a bilinear resize to (height, width);
//  - inference: the input unchanged, NOT cropped (Keras 3 returns the images as they are, so the
//    output shape then differs from compute_output_shape, which gives (height, width) as Keras's).
// Differentiable in the input (a slice, or a slice and a resize).
class RandomCropImpl : public ImagePreprocessingLayer {
 public:
  explicit RandomCropImpl(RandomCropOptions options);
  std::string class_name() const override { return "RandomCrop"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& in) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RandomCropOptions& options() const { return options_; }

 private:
  RandomCropOptions options_;
};
KERAS_LAYER_HANDLE(RandomCrop, RandomCropOptions);

RandomCropOptions random_crop_options_from_config(const json& config);

}  // namespace keras::layers
