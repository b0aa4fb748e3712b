// GlobalMaxPooling2D (keras.layers.GlobalMaxPooling2D); see layers/global_pooling_base.h.
#pragma once
#include "layers/global_pooling_base.h"

namespace keras::layers {
KERAS_GLOBAL_POOLING_LAYER(GlobalMaxPooling2D, true, 2);
}  // namespace keras::layers
