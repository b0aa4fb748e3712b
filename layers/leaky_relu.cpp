#include "layers/leaky_relu.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

LeakyReLUImpl::LeakyReLUImpl(LeakyReLUOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  if (!(options_.negative_slope >= 0)) fail<ValueError>(where(), "negative_slope >= 0", std::to_string(options_.negative_slope));
}

void LeakyReLUImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
}

TensorList LeakyReLUImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::leaky_relu(inputs[0], options_.negative_slope)};
}

json LeakyReLUImpl::get_config() const {
  json c = base_config();
  c["negative_slope"] = options_.negative_slope;
  return c;
}

LeakyReLUOptions leaky_relu_options_from_config(const json& c) {
  LeakyReLUOptions o;
  config::read_base_keys(c, o);
  if (c.contains("alpha") && c["alpha"].is_number()) o.negative_slope = c["alpha"].get<double>();  // Keras 2
  if (c.contains("negative_slope") && c["negative_slope"].is_number()) o.negative_slope = c["negative_slope"].get<double>();
  return o;
}

KERAS_REGISTER_LAYER(LeakyReLU, [](const json& c) -> LayerPtr {
  return std::make_shared<LeakyReLUImpl>(leaky_relu_options_from_config(c));
});
KERAS_SIGNATURE(LeakyReLU, .built_at_init = true);

}  // namespace keras::layers
