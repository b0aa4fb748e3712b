// Xception (keras.applications.xception; Chollet, CVPR 2017), built with Keras's layer names
// (block1_conv1 ... block14_sepconv2_act; the residual 1x1 convolutions, their
// BatchNormalizations and the adds are named automatically: conv2d, batch_normalization, add,
// conv2d_1, ...), layer order and weight order, so that the weights files Keras publishes
// (xception_weights_tf_dim_ordering_tf_kernels[_notop].h5, legacy weights-only HDF5) load by
// topology through `weights` (application_options.h), and to_json() equals what Keras writes
// for the same arguments.
//
//   auto m = keras::applications::Xception({.include_top = false, .input_shape = {71, 71, 3},
//                                           .pooling = "avg"});
//   Tensor x = keras::applications::xception::preprocess_input(images);   // "tf" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

using XceptionOptions = ApplicationOptions;

// Minimum input 71x71, default 299x299; errors as application_options.h says.
std::shared_ptr<Model> Xception(const XceptionOptions& options = {});

namespace xception {
using imagenet_utils::decode_predictions;
using imagenet_utils::tf::preprocess_input;  // "tf" mode
}  // namespace xception

}  // namespace keras::applications
