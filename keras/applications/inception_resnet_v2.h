// InceptionResNetV2 (keras.applications.inception_resnet_v2; Szegedy et al., AAAI 2017), built
// with Keras's layer names (the stem and branch convolutions are named automatically in creation
// order: conv2d, batch_normalization, activation, ...; the merges mixed_5b, mixed_6a, mixed_7a,
// the blocks block35_1 .. block35_10, block17_1 .. block17_20, block8_1 .. block8_10 (<block>_mixed,
// <block>_conv, <block>_ac) and conv_7b by hand; the residual scalings custom_scale_layer, ...),
// layer order and weight order, so that the weights files Keras publishes
// (inception_resnet_v2_weights_tf_dim_ordering_tf_kernels[_notop].h5, legacy weights-only HDF5)
// load by topology through `weights` (application_options.h), and to_json() equals what Keras
// writes for the same arguments.
//
//   auto m = keras::applications::InceptionResNetV2({.include_top = false, .input_shape = {150, 150, 3},
//                                                    .pooling = "avg"});
//   Tensor x = keras::applications::inception_resnet_v2::preprocess_input(images);   // "tf" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

using InceptionResNetV2Options = ApplicationOptions;

// Minimum input 75x75, default 299x299; errors as application_options.h says.
std::shared_ptr<Model> InceptionResNetV2(const InceptionResNetV2Options& options = {});

namespace inception_resnet_v2 {
using imagenet_utils::decode_predictions;
using imagenet_utils::tf::preprocess_input;  // "tf" mode
}  // namespace inception_resnet_v2

}  // namespace keras::applications
