// MaxPooling2D (keras.layers.MaxPooling2D): max pooling over 2D windows; see layers/pooling_base.h.
#pragma once
#include "layers/pooling_base.h"

namespace keras::layers {
KERAS_POOLING_LAYER(MaxPooling2D, Pooling2DOptions, true, 2);
}  // namespace keras::layers
