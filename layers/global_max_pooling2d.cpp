#include "layers/global_max_pooling2d.h"

#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::layers {
KERAS_REGISTER_LAYER(GlobalMaxPooling2D, [](const json& c) -> LayerPtr {
  return std::make_shared<GlobalMaxPooling2DImpl>(global_pooling_options_from_config(c));
});
KERAS_SIGNATURE(GlobalMaxPooling2D, .built_at_init = true);
}  // namespace keras::layers
