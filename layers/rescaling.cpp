#include "layers/rescaling.h"

#include <algorithm>

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

RescalingImpl::RescalingImpl(RescalingOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {}

void RescalingImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const auto n = static_cast<int64_t>(options_.channel_scales.size());
  if (n > 0 && (shapes[0].empty() || (shapes[0].back() != -1 && shapes[0].back() != n)))
    fail<ShapeError>(where(), "an input whose last axis has " + std::to_string(n) + " entries (one per scale)",
                     "shape " + shape_str(shapes[0]));
}

TensorList RescalingImpl::call(const TensorList& inputs, const CallContext&) {
  Tensor x = inputs[0];
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);  // uint8-like pixels arrive as integers
  Tensor y = options_.channel_scales.empty()
                 ? ops::multiply(x, options_.scale)
                 : ops::multiply(x, Tensor::from_vector(options_.channel_scales).astype(x.dtype()).to(x.device()));
  return {options_.offset == 0.0 ? y : ops::add(y, options_.offset)};
}

json RescalingImpl::get_config() const {
  json c = base_config();
  c["scale"] = options_.channel_scales.empty() ? json(options_.scale) : json(options_.channel_scales);
  c["offset"] = options_.offset;
  return c;
}

RescalingOptions rescaling_options_from_config(const json& c) {
  RescalingOptions o;
  config::read_base_keys(c, o);
  if (c.contains("scale")) {
    const json& scale = c["scale"];
    const bool numbers = scale.is_array() && !scale.empty() &&
                         std::all_of(scale.begin(), scale.end(), [](const json& v) { return v.is_number(); });
    if (!scale.is_number() && !numbers)
      fail<NotImplementedError>("Rescaling config 'scale'", "a number or a list of numbers (one per channel)",
                                scale.dump(), "Other array scales are not supported yet.");
    if (numbers)
      o.channel_scales = scale.get<std::vector<double>>();
    else
      o.scale = scale.get<double>();
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
