// DenseNet121/169/201 (keras.applications.densenet; Huang et al., CVPR 2017), built with
// Keras's layer names (conv1_conv, conv2_block1_0_bn, ..., pool2_conv, ..., bn, relu, avg_pool,
// predictions), layer order and weight order, so that the weights files Keras publishes
// (densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5, ..., legacy weights-only HDF5) load
// by topology through `weights` (application_options.h), and to_json() equals what Keras
// writes for the same arguments.
//
//   auto m = keras::applications::DenseNet121({.include_top = false, .input_shape = {64, 64, 3},
//                                              .pooling = "max"});
//   Tensor x = keras::applications::densenet::preprocess_input(images);   // "torch" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

using DenseNetOptions = ApplicationOptions;

// Minimum input 32x32, default 224x224; errors as application_options.h says.
std::shared_ptr<Model> DenseNet121(const DenseNetOptions& options = {});
std::shared_ptr<Model> DenseNet169(const DenseNetOptions& options = {});
std::shared_ptr<Model> DenseNet201(const DenseNetOptions& options = {});

namespace densenet {
using imagenet_utils::decode_predictions;
using imagenet_utils::torch::preprocess_input;  // "torch" mode
}  // namespace densenet

}  // namespace keras::applications
