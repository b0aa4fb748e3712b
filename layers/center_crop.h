// CenterCrop (keras.layers.CenterCrop): the centred (height, width) window of each image.
// Config: height, width, data_format.
#pragma once
#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct CenterCropOptions {
  int64_t height = 0;  // >= 1 (ValueError otherwise)
  int64_t width = 0;   // >= 1
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Input (batch, H, W, C) or (H, W, C). When the image is at least (height, width) the window
// starts at ((H - height) // 2, (W - width) // 2); when it is smaller in either extent, Keras
// resizes instead (smart_resize: the largest centred window of the target aspect ratio, then a
// bilinear resize), and so does this layer. Always applied; differentiable in the input.
class CenterCropImpl : public ImagePreprocessingLayer {
 public:
  explicit CenterCropImpl(CenterCropOptions options);
  std::string class_name() const override { return "CenterCrop"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& in) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const CenterCropOptions& options() const { return options_; }

 private:
  CenterCropOptions options_;
};
KERAS_LAYER_HANDLE(CenterCrop, CenterCropOptions);

CenterCropOptions center_crop_options_from_config(const json& config);

}  // namespace keras::layers
