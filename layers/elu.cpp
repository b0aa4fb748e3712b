#include "layers/elu.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

ELUImpl::ELUImpl(ELUOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {}

void ELUImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
}

TensorList ELUImpl::call(const TensorList& inputs, const CallContext&) { return {ops::elu(inputs[0], options_.alpha)}; }

json ELUImpl::get_config() const {
  json c = base_config();
  c["alpha"] = options_.alpha;
  return c;
}

ELUOptions elu_options_from_config(const json& c) {
  ELUOptions o;
  config::read_base_keys(c, o);
  if (c.contains("alpha") && c["alpha"].is_number()) o.alpha = c["alpha"].get<double>();
  return o;
}

KERAS_REGISTER_LAYER(ELU, [](const json& c) -> LayerPtr { return std::make_shared<ELUImpl>(elu_options_from_config(c)); });
KERAS_SIGNATURE(ELU, .built_at_init = true);

}  // namespace keras::layers
