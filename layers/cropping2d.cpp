#include "layers/cropping2d.h"

#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

Cropping2DImpl::Cropping2DImpl(Cropping2DOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  for (const auto& p : options_.cropping.sizes())
    if (p[0] < 0 || p[1] < 0) fail<ValueError>(where(), "non-negative cropping", options_.cropping.str());
}

void Cropping2DImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  if (s.size() != 4) fail<ShapeError>(where(), "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(s));
  auto p = options_.cropping.sizes();
  for (int i = 0; i < 2; ++i)
    if (s[i + 1] >= 0 && p[i][0] + p[i][1] >= s[i + 1])
      fail<ShapeError>(where(), "cropping that leaves at least one row and column",
                       "cropping " + options_.cropping.str() + " of input shape " + shape_str(s));
}

std::vector<Shape> Cropping2DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape s = shapes[0];
  auto p = options_.cropping.sizes();
  for (int i = 0; i < 2; ++i)
    if (s[i + 1] >= 0) s[i + 1] -= p[i][0] + p[i][1];
  return {s};
}

TensorList Cropping2DImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::crop2d(inputs[0], options_.cropping.sizes())};
}

json Cropping2DImpl::get_config() const {
  json c = base_config();
  c["cropping"] = options_.cropping.to_json();
  c["data_format"] = options_.data_format;
  return c;
}

Cropping2DOptions cropping2d_options_from_config(const json& c) {
  Cropping2DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("cropping")) o.cropping = Padding2DArg::from_json(c["cropping"], "Cropping2D config 'cropping'");
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(Cropping2D, [](const json& c) -> LayerPtr {
  return std::make_shared<Cropping2DImpl>(cropping2d_options_from_config(c));
});

}  // namespace keras::layers
