// MaxPooling1D (keras.layers.MaxPooling1D): max pooling over 1D windows; see layers/pooling_base.h.
#pragma once
#include "layers/pooling_base.h"

namespace keras::layers {
KERAS_POOLING_LAYER(MaxPooling1D, Pooling1DOptions, true, 1);
}  // namespace keras::layers
