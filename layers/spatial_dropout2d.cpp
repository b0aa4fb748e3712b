#include "layers/spatial_dropout2d.h"

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

SpatialDropout2DImpl::SpatialDropout2DImpl(SpatialDropout2DOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  if (!(options_.rate >= 0.0 && options_.rate < 1.0))
    fail<ValueError>(where(), "rate in [0, 1)", std::to_string(options_.rate));
}

void SpatialDropout2DImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != 4)
    fail<ShapeError>(where(), "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(shapes[0]));
}

std::vector<Shape> SpatialDropout2DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return shapes;
}

TensorList SpatialDropout2DImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training || options_.rate == 0.0) return {inputs[0]};
  std::optional<uint64_t> seed;
  if (options_.seed) seed = static_cast<uint64_t>(*options_.seed);
  return {ops::spatial_dropout(inputs[0], options_.rate, generator(seed))};
}

json SpatialDropout2DImpl::get_config() const {
  json c = base_config();
  c["rate"] = options_.rate;
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  c["data_format"] = options_.data_format;
  return c;
}

SpatialDropout2DOptions spatial_dropout2d_options_from_config(const json& c) {
  SpatialDropout2DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("rate") && c["rate"].is_number()) o.rate = c["rate"].get<double>();
  o.seed = config::optional_int(c, "seed");
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(SpatialDropout2D, [](const json& c) -> LayerPtr {
  return std::make_shared<SpatialDropout2DImpl>(spatial_dropout2d_options_from_config(c));
});
KERAS_SIGNATURE(SpatialDropout2D, .built_at_init = true, .training_default = false);

}  // namespace keras::layers
