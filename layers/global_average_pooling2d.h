// GlobalAveragePooling2D (keras.layers.GlobalAveragePooling2D); see layers/global_pooling_base.h.
#pragma once
#include "layers/global_pooling_base.h"

namespace keras::layers {
KERAS_GLOBAL_POOLING_LAYER(GlobalAveragePooling2D, false, 2);
}  // namespace keras::layers
