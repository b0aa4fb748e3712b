#include "layers/activation.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

ActivationImpl::ActivationImpl(ActivationOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (!ops::is_activation(options_.activation))
    fail<ValueError>(where(), "a known activation", "'" + options_.activation + "'");
}

void ActivationImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
}

TensorList ActivationImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::activation(options_.activation, inputs[0])};
}

json ActivationImpl::get_config() const {
  json c = base_config();
  c["activation"] = options_.activation;
  return c;
}

ActivationOptions activation_options_from_config(const json& c) {
  ActivationOptions o;
  config::read_base_keys(c, o);
  if (c.contains("activation")) o.activation = config::activation_from_config(c["activation"]);
  return o;
}

KERAS_REGISTER_LAYER(Activation, [](const json& c) -> LayerPtr {
  return std::make_shared<ActivationImpl>(activation_options_from_config(c));
});
KERAS_SIGNATURE(Activation, .built_at_init = true);

}  // namespace keras::layers
