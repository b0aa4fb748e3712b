// AveragePooling2D (keras.layers.AveragePooling2D): average pooling over 2D windows; see layers/pooling_base.h.
#pragma once
#include "layers/pooling_base.h"

namespace keras::layers {
KERAS_POOLING_LAYER(AveragePooling2D, Pooling2DOptions, false, 2);
}  // namespace keras::layers
