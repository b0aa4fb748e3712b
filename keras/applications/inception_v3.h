// InceptionV3 (keras.applications.inception_v3; Szegedy et al., CVPR 2016), built with Keras's
// layer names (Keras names most of its layers automatically in creation order: conv2d,
// batch_normalization, activation, ..., conv2d_93; the merges mixed0..mixed10 and
// mixed9_0/mixed9_1 by hand), layer order and weight order, so that the weights files Keras
// publishes (inception_v3_weights_tf_dim_ordering_tf_kernels[_notop].h5, legacy weights-only
// HDF5) load by topology through `weights` (application_options.h), and to_json() equals what
// Keras writes for the same arguments.
//
//   auto m = keras::applications::InceptionV3({.include_top = false, .input_shape = {139, 139, 3}});
//   Tensor x = keras::applications::inception_v3::preprocess_input(images);   // "tf" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

using InceptionV3Options = ApplicationOptions;

// Minimum input 75x75, default 299x299; errors as application_options.h says.
std::shared_ptr<Model> InceptionV3(const InceptionV3Options& options = {});

namespace inception_v3 {
using imagenet_utils::decode_predictions;
using imagenet_utils::tf::preprocess_input;  // "tf" mode
}  // namespace inception_v3

}  // namespace keras::applications
