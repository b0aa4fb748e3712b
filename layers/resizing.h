// Resizing (keras.layers.Resizing): resizes images to (height, width) as Keras 3 does on its
// TensorFlow backend (tf.image.resize, half-pixel centres, no antialiasing).
// Config: height, width, interpolation, crop_to_aspect_ratio, pad_to_aspect_ratio, fill_mode,
// fill_value, antialias, data_format.
#pragma once
#include "layers/image_preprocessing_layer.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct ResizingOptions {
  int64_t height = 0;                        // >= 1 (ValueError otherwise)
  int64_t width = 0;                         // >= 1
  std::string interpolation = "bilinear";    // "bilinear" or "nearest"; Keras's bicubic/lanczos/area:
                                             // NotImplementedError; anything else ValueError
  bool crop_to_aspect_ratio = false;         // crop the largest centred window of the target ratio first
  bool pad_to_aspect_ratio = false;          // pad the short side evenly with fill_value first
  std::string fill_mode = "constant";        // only "constant" (as Keras)
  double fill_value = 0.0;
  bool antialias = false;                    // true: NotImplementedError
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Input (batch, H, W, C) or one image (H, W, C); output (..., height, width, C), float (integer
// pixels are cast to float32: Keras rounds them back to the input's integer dtype, this framework
// has no integer image dtype to return). Always applied, training or not. Differentiable in the
// input (bilinear and nearest resizing both have gradients; the crop is a slice, the padding a
// concatenation).
class ResizingImpl : public ImagePreprocessingLayer {
 public:
  explicit ResizingImpl(ResizingOptions options);
  std::string class_name() const override { return "Resizing"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& in) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const ResizingOptions& options() const { return options_; }

 private:
  ResizingOptions options_;
};
KERAS_LAYER_HANDLE(Resizing, ResizingOptions);

// Reads a Keras 2 or Keras 3 Resizing config (unknown keys ignored).
ResizingOptions resizing_options_from_config(const json& config);

// Resizes x (N, H, W, C) to (height, width) with "bilinear" or "nearest" (shared by the layers).
Tensor resize_images(const Tensor& x, int64_t height, int64_t width, const std::string& interpolation);

// The spatial extents of an image input (rank 3 or 4) replaced by (height, width).
Shape with_image_size(Shape s, int64_t height, int64_t width);

}  // namespace keras::layers
