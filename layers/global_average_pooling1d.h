// GlobalAveragePooling1D (keras.layers.GlobalAveragePooling1D); see layers/global_pooling_base.h.
#pragma once
#include "layers/global_pooling_base.h"

namespace keras::layers {
KERAS_GLOBAL_POOLING_LAYER(GlobalAveragePooling1D, false, 1);
}  // namespace keras::layers
