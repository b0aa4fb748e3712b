#include "layers/global_max_pooling1d.h"

#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::layers {
KERAS_REGISTER_LAYER(GlobalMaxPooling1D, [](const json& c) -> LayerPtr {
  return std::make_shared<GlobalMaxPooling1DImpl>(global_pooling_options_from_config(c));
});
KERAS_SIGNATURE(GlobalMaxPooling1D, .built_at_init = true);
}  // namespace keras::layers
