#include "layers/global_average_pooling1d.h"

#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::layers {
KERAS_REGISTER_LAYER(GlobalAveragePooling1D, [](const json& c) -> LayerPtr {
  return std::make_shared<GlobalAveragePooling1DImpl>(global_pooling_options_from_config(c));
});
KERAS_SIGNATURE(GlobalAveragePooling1D, .built_at_init = true, .takes_mask = true);
}  // namespace keras::layers
