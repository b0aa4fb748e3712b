#include "layers/up_sampling2d.h"

#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

UpSampling2DImpl::UpSampling2DImpl(UpSampling2DOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  if (options_.size.first < 1 || options_.size.second < 1)
    fail<ValueError>(where(), "size factors >= 1", options_.size.str());
  if (options_.interpolation != "nearest" && options_.interpolation != "bilinear")
    fail<ValueError>(where(), "interpolation 'nearest' or 'bilinear'", "'" + options_.interpolation + "'");
}

void UpSampling2DImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != 4)
    fail<ShapeError>(where(), "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(shapes[0]));
}

std::vector<Shape> UpSampling2DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape s = shapes[0];
  if (s[1] >= 0) s[1] *= options_.size.first;
  if (s[2] >= 0) s[2] *= options_.size.second;
  return {s};
}

TensorList UpSampling2DImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  if (options_.interpolation == "nearest") return {ops::upsample_nearest2d(x, options_.size.size2())};
  return {ops::resize_bilinear2d(x, {x.dim(1) * options_.size.first, x.dim(2) * options_.size.second})};
}

json UpSampling2DImpl::get_config() const {
  json c = base_config();
  c["size"] = options_.size.to_json();
  c["data_format"] = options_.data_format;
  c["interpolation"] = options_.interpolation;
  return c;
}

UpSampling2DOptions up_sampling2d_options_from_config(const json& c) {
  UpSampling2DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("size")) o.size = PairArg::from_json(c["size"], "UpSampling2D config 'size'");
  o.data_format = data_format_from_config(c);
  if (c.contains("interpolation") && c["interpolation"].is_string()) o.interpolation = c["interpolation"].get<std::string>();
  return o;
}

KERAS_REGISTER_LAYER(UpSampling2D, [](const json& c) -> LayerPtr {
  return std::make_shared<UpSampling2DImpl>(up_sampling2d_options_from_config(c));
});

}  // namespace keras::layers
