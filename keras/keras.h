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
#include "callbacks/callbacks.h"
#include "callbacks/tensorboard.h"
#include "keras/callback.h"
#include "keras/datasets.h"
#include "keras/model.h"
#include "keras/progbar.h"
#include "keras/sequential.h"
#include "layers/activation.h"
#include "layers/concatenate.h"
#include "layers/dense.h"
#include "layers/dot.h"
#include "layers/dropout.h"
#include "layers/elementwise_merge.h"
#include "layers/flatten.h"
#include "layers/initializers.h"
#include "layers/input_layer.h"
#include "layers/keras_tensor_ops.h"
#include "layers/layer_registry.h"
#include "layers/regularizers.h"
#include "layers/reshape.h"
#include "losses/losses.h"
#include "metrics/all_metrics.h"
#include "optimizers/optimizers.h"

namespace keras {
// keras.Input and keras.utils.set_random_seed at the top level, as in Python.
using layers::Input;
namespace utils {
inline void set_random_seed(uint64_t seed) { keras::set_random_seed(seed); }
}  // namespace utils
}  // namespace keras
