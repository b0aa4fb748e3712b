#include "layers/center_crop.h"

#include "layers/augment_args.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/resizing.h"
#include "layers/spatial_args.h"

namespace keras::layers {

CenterCropImpl::CenterCropImpl(CenterCropOptions options)
    : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  check_target_size(where(), options_.height, options_.width);
}

void CenterCropImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

std::vector<Shape> CenterCropImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return {with_image_size(shapes[0], options_.height, options_.width)};
}

std::vector<DType> CenterCropImpl::compute_output_dtype(const std::vector<DType>& in) {
  return {image_output_dtype(in.at(0))};
}

TensorList CenterCropImpl::call(const TensorList& inputs, const CallContext&) {
  Tensor x = as_image_batch(inputs[0]);
  const int64_t h = x.dim(1), w = x.dim(2), th = options_.height, tw = options_.width;
  CropBox box{(h - th) / 2, (w - tw) / 2, th, tw};
  if (h < th || w < tw) box = aspect_ratio_crop_box(h, w, th, tw);  // Keras's smart_resize
  return {restore_rank(crop_and_resize(x, box, th, tw), inputs[0].rank())};
}

json CenterCropImpl::get_config() const {
  json c = base_config();
  c["data_format"] = options_.data_format;
  c["height"] = options_.height;
  c["width"] = options_.width;
  return c;
}

CenterCropOptions center_crop_options_from_config(const json& c) {
  CenterCropOptions o;
  config::read_base_keys(c, o);
  o.height = c.value("height", int64_t{0});
  o.width = c.value("width", int64_t{0});
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(CenterCrop, [](const json& c) -> LayerPtr {
  return std::make_shared<CenterCropImpl>(center_crop_options_from_config(c));
});
KERAS_SIGNATURE(CenterCrop, .training_default = true);

}  // namespace keras::layers
