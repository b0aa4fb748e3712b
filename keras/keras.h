// The umbrella header: everything a user of the framework needs.
//   #include <keras/keras.h>
//   namespace k = keras;
#pragma once

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "backend/tensor.h"
#include "backend/threads.h"
#include "backend/variable.h"
#include "keras/callback.h"
#include "keras/datasets.h"
#include "keras/model.h"
#include "keras/progbar.h"
#include "keras/sequential.h"
#include "layers/activation.h"
#include "layers/dense.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/initializers.h"
#include "layers/input_layer.h"
#include "layers/layer_registry.h"
#include "layers/regularizers.h"
#include "layers/reshape.h"
#include "losses/losses.h"
#include "metrics/metrics.h"
#include "optimizers/optimizers.h"

namespace keras {
// keras.Input and keras.utils.set_random_seed at the top level, as in Python.
using layers::Input;
namespace utils {
inline void set_random_seed(uint64_t seed) { keras::set_random_seed(seed); }
}  // namespace utils
}  // namespace keras
