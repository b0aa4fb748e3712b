#include "layers/zero_padding2d.h"

#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

ZeroPadding2DImpl::ZeroPadding2DImpl(ZeroPadding2DOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  for (const auto& p : options_.padding.sizes())
    if (p[0] < 0 || p[1] < 0) fail<ValueError>(where(), "non-negative padding", options_.padding.str());
}

void ZeroPadding2DImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != 4)
    fail<ShapeError>(where(), "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(shapes[0]));
}

std::vector<Shape> ZeroPadding2DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape s = shapes[0];
  auto p = options_.padding.sizes();
  for (int i = 0; i < 2; ++i)
    if (s[i + 1] >= 0) s[i + 1] += p[i][0] + p[i][1];
  return {s};
}

TensorList ZeroPadding2DImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::zero_pad2d(inputs[0], options_.padding.sizes())};
}

json ZeroPadding2DImpl::get_config() const {
  json c = base_config();
  c["padding"] = options_.padding.to_json();
  c["data_format"] = options_.data_format;
  return c;
}

ZeroPadding2DOptions zero_padding2d_options_from_config(const json& c) {
  ZeroPadding2DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("padding")) o.padding = Padding2DArg::from_json(c["padding"], "ZeroPadding2D config 'padding'");
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(ZeroPadding2D, [](const json& c) -> LayerPtr {
  return std::make_shared<ZeroPadding2DImpl>(zero_padding2d_options_from_config(c));
});

}  // namespace keras::layers
