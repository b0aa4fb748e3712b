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
#include "keras/dataset.h"
#include "keras/readers.h"
#include "layers/activation.h"
#include "layers/average_pooling1d.h"
#include "layers/average_pooling2d.h"
#include "layers/batch_normalization.h"
#include "layers/concatenate.h"
#include "layers/conv1d.h"
#include "layers/conv2d.h"
#include "layers/conv2d_transpose.h"
#include "layers/cropping2d.h"
#include "layers/dense.h"
#include "layers/depthwise_conv2d.h"
#include "layers/dot.h"
#include "layers/dropout.h"
#include "layers/elu.h"
#include "layers/flatten.h"
#include "layers/global_average_pooling1d.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_max_pooling1d.h"
#include "layers/global_max_pooling2d.h"
#include "layers/initializers.h"
#include "layers/input_layer.h"
#include "layers/keras_tensor_ops.h"
#include "layers/layer.h"
#include "layers/layer_normalization.h"
#include "layers/layer_registry.h"
#include "layers/leaky_relu.h"
#include "layers/max_pooling1d.h"
#include "layers/max_pooling2d.h"
#include "layers/op_layer.h"
#include "layers/regularizers.h"
#include "layers/relu.h"
#include "layers/rescaling.h"
#include "layers/reshape.h"
#include "layers/separable_conv2d.h"
#include "layers/softmax.h"
#include "layers/spatial_dropout2d.h"
#include "layers/up_sampling2d.h"
#include "layers/zero_padding2d.h"
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
