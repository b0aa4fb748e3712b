#include "layers/identity.h"

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

KERAS_REGISTER_LAYER(Identity, [](const json& c) -> LayerPtr {
  IdentityOptions o;
  config::read_base_keys(c, o);
  return std::make_shared<IdentityImpl>(o);
});
KERAS_SIGNATURE(Identity, .built_at_init = true);

}  // namespace keras::layers
