#include "layers/rescaling.h"

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

RescalingImpl::RescalingImpl(RescalingOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {}

void RescalingImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
}

TensorList RescalingImpl::call(const TensorList& inputs, const CallContext&) {
  Tensor x = inputs[0];
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);  // uint8-like pixels arrive as integers
  Tensor y = ops::multiply(x, options_.scale);
  return {options_.offset == 0.0 ? y : ops::add(y, options_.offset)};
}

json RescalingImpl::get_config() const {
  json c = base_config();
  c["scale"] = options_.scale;
  c["offset"] = options_.offset;
  return c;
}

RescalingOptions rescaling_options_from_config(const json& c) {
  RescalingOptions o;
  config::read_base_keys(c, o);
  if (c.contains("scale")) {
    if (!c["scale"].is_number())
      fail<NotImplementedError>("Rescaling config 'scale'", "a number", c["scale"].dump(), "Per-channel scales are not supported yet.");
    o.scale = c["scale"].get<double>();
  }
  if (c.contains("offset")) {
    if (!c["offset"].is_number())
      fail<NotImplementedError>("Rescaling config 'offset'", "a number", c["offset"].dump(), "Per-channel offsets are not supported yet.");
    o.offset = c["offset"].get<double>();
  }
  return o;
}

KERAS_REGISTER_LAYER(Rescaling, [](const json& c) -> LayerPtr {
  return std::make_shared<RescalingImpl>(rescaling_options_from_config(c));
});

}  // namespace keras::layers
