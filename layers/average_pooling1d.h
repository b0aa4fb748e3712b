// AveragePooling1D (keras.layers.AveragePooling1D): average pooling over 1D windows; see layers/pooling_base.h.
#pragma once
#include "layers/pooling_base.h"

namespace keras::layers {
KERAS_POOLING_LAYER(AveragePooling1D, Pooling1DOptions, false, 1);
}  // namespace keras::layers
