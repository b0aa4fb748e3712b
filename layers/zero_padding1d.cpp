#include "layers/zero_padding1d.h"

#include "backend/ops.h"
#include "layers/cropping1d.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

ZeroPadding1DImpl::ZeroPadding1DImpl(ZeroPadding1DOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  if (options_.padding.first < 0 || options_.padding.second < 0)
    fail<ValueError>(where(), "non-negative padding", options_.padding.str());
}

void ZeroPadding1DImpl::validate_input(const std::vector<Shape>& shapes) const { require_one_sequence_input(shapes, where()); }

std::vector<Shape> ZeroPadding1DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape s = shapes[0];
  if (s[1] >= 0) s[1] += options_.padding.first + options_.padding.second;
  return {s};
}

TensorList ZeroPadding1DImpl::call(const TensorList& inputs, const CallContext&) {
  // The steps as the height of a one-pixel-wide image.
  const Tensor& x = inputs[0];
  Tensor image = ops::reshape(x, {x.dim(0), x.dim(1), 1, x.dim(2)});
  Tensor padded = ops::zero_pad2d(image, {options_.padding.size2(), ops::Size2{0, 0}});
  return {ops::reshape(padded, {x.dim(0), padded.dim(1), x.dim(2)})};
}

json ZeroPadding1DImpl::get_config() const {
  json c = base_config();
  c["padding"] = options_.padding.to_json();
  c["data_format"] = options_.data_format;
  return c;
}

ZeroPadding1DOptions zero_padding1d_options_from_config(const json& c) {
  ZeroPadding1DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("padding")) o.padding = PairArg::from_json(c["padding"], "ZeroPadding1D config 'padding'");
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(ZeroPadding1D, [](const json& c) -> LayerPtr {
  return std::make_shared<ZeroPadding1DImpl>(zero_padding1d_options_from_config(c));
});
KERAS_SIGNATURE(ZeroPadding1D);

}  // namespace keras::layers
