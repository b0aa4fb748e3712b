// GlobalMaxPooling1D (keras.layers.GlobalMaxPooling1D); see layers/global_pooling_base.h.
#pragma once
#include "layers/global_pooling_base.h"

namespace keras::layers {
KERAS_GLOBAL_POOLING_LAYER(GlobalMaxPooling1D, true, 1);
}  // namespace keras::layers
