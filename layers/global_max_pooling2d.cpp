#include "layers/global_max_pooling2d.h"

#include "layers/layer_registry.h"

namespace keras::layers {
KERAS_REGISTER_LAYER(GlobalMaxPooling2D, [](const json& c) -> LayerPtr {
  return std::make_shared<GlobalMaxPooling2DImpl>(global_pooling_options_from_config(c));
});
}  // namespace keras::layers
