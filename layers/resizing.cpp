#include "layers/resizing.h"

#include "backend/ops_image.h"
#include "layers/augment_args.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/spatial_args.h"

namespace keras::layers {

Tensor resize_images(const Tensor& x, int64_t height, int64_t width, const std::string& interpolation) {
  if (x.dim(1) == height && x.dim(2) == width) return x;  // both kernels are the identity then
  if (interpolation == "nearest") return ops::resize_nearest2d(x, {height, width});
  return ops::resize_bilinear2d(x, {height, width});
}

Shape with_image_size(Shape s, int64_t height, int64_t width) {
  const size_t h = s.size() == 4 ? 1 : 0;
  s[h] = height;
  s[h + 1] = width;
  return s;
}

namespace {

// Keras's pad_to_aspect_ratio: the padded extent is max(h, int(w * target_h / target_w)) (and
// alike for w), and int((padded - h) / 2) rows of fill_value go on EACH side (so an odd
// difference pads one row less than the padded extent, exactly as Keras does).
Tensor pad_to_aspect_ratio(const Tensor& x, int64_t th, int64_t tw, double fill) {
  const int64_t h = x.dim(1), w = x.dim(2);
  const int64_t pad_h = std::max<int64_t>(h, static_cast<int64_t>(static_cast<double>(w * th) / tw));
  const int64_t pad_w = std::max<int64_t>(w, static_cast<int64_t>(static_cast<double>(h * tw) / th));
  const int64_t top = static_cast<int64_t>(static_cast<double>(pad_h - h) / 2);
  const int64_t left = static_cast<int64_t>(static_cast<double>(pad_w - w) / 2);
  Tensor y = x;
  if (top > 0) {
    Tensor band = Tensor::full({x.dim(0), top, w, x.dim(3)}, fill, x.dtype(), x.device());
    y = ops::concatenate({band, y, band}, 1);
  }
  if (left > 0) {
    Tensor band = Tensor::full({x.dim(0), y.dim(1), left, x.dim(3)}, fill, x.dtype(), x.device());
    y = ops::concatenate({band, y, band}, 2);
  }
  return y;
}

}  // namespace

ResizingImpl::ResizingImpl(ResizingOptions options) : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  check_target_size(where(), options_.height, options_.width);
  const std::string& ip = options_.interpolation;
  if (ip == "bicubic" || ip == "lanczos3" || ip == "lanczos5" || ip == "area")
    fail<NotImplementedError>(where(), "interpolation 'bilinear' or 'nearest'", "'" + ip + "'",
                              "Keras accepts it; this framework does not implement it yet.");
  if (ip != "bilinear" && ip != "nearest")
    fail<ValueError>(where(), "interpolation one of 'bilinear', 'nearest', 'bicubic', 'lanczos3', 'lanczos5', 'area'",
                     "'" + ip + "'");
  if (options_.crop_to_aspect_ratio && options_.pad_to_aspect_ratio)
    fail<ValueError>(where(), "at most one of crop_to_aspect_ratio and pad_to_aspect_ratio", "both true");
  if (options_.fill_mode != "constant")
    fail<ValueError>(where(), "fill_mode 'constant' (the only one Keras supports)", "'" + options_.fill_mode + "'");
  if (options_.antialias)
    fail<NotImplementedError>(where(), "antialias false", "true", "Antialiased resizing is not implemented yet.");
}

void ResizingImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

std::vector<Shape> ResizingImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return {with_image_size(shapes[0], options_.height, options_.width)};
}

std::vector<DType> ResizingImpl::compute_output_dtype(const std::vector<DType>& in) {
  return {image_output_dtype(in.at(0))};
}

TensorList ResizingImpl::call(const TensorList& inputs, const CallContext&) {
  // 1. a float batch, 2. crop or pad to the target aspect ratio, 3. resize.
  Tensor x = as_image_batch(inputs[0]);
  if (options_.crop_to_aspect_ratio) {
    CropBox box = aspect_ratio_crop_box(x.dim(1), x.dim(2), options_.height, options_.width);
    x = ops::slice(x, {0, box.top, box.left, 0}, {x.dim(0), box.height, box.width, x.dim(3)});
  } else if (options_.pad_to_aspect_ratio) {
    x = pad_to_aspect_ratio(x, options_.height, options_.width, options_.fill_value);
  }
  return {restore_rank(resize_images(x, options_.height, options_.width, options_.interpolation), inputs[0].rank())};
}

json ResizingImpl::get_config() const {
  json c = base_config();
  c["data_format"] = options_.data_format;
  c["height"] = options_.height;
  c["width"] = options_.width;
  c["interpolation"] = options_.interpolation;
  c["crop_to_aspect_ratio"] = options_.crop_to_aspect_ratio;
  c["pad_to_aspect_ratio"] = options_.pad_to_aspect_ratio;
  c["fill_mode"] = options_.fill_mode;
  c["fill_value"] = options_.fill_value;
  c["antialias"] = options_.antialias;
  return c;
}

ResizingOptions resizing_options_from_config(const json& c) {
  ResizingOptions o;
  config::read_base_keys(c, o);
  o.height = c.value("height", int64_t{0});
  o.width = c.value("width", int64_t{0});
  o.interpolation = c.value("interpolation", o.interpolation);
  o.crop_to_aspect_ratio = c.value("crop_to_aspect_ratio", false);
  o.pad_to_aspect_ratio = c.value("pad_to_aspect_ratio", false);
  o.fill_mode = c.value("fill_mode", o.fill_mode);
  if (c.contains("fill_value") && c["fill_value"].is_number()) o.fill_value = c["fill_value"].get<double>();
  o.antialias = c.value("antialias", false);
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(Resizing, [](const json& c) -> LayerPtr {
  return std::make_shared<ResizingImpl>(resizing_options_from_config(c));
});
KERAS_SIGNATURE(Resizing, .training_default = true);

}  // namespace keras::layers
