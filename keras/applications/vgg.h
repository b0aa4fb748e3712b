// VGG16 and VGG19 (keras.applications.vgg16 / vgg19; Simonyan & Zisserman, ICLR 2015), built
// with Keras's layer names (block1_conv1 ... block5_pool, flatten, fc1, fc2, predictions), layer
// order and weight order, so that:
//   - the weights files Keras publishes (vgg16_weights_tf_dim_ordering_tf_kernels[_notop].h5,
//     legacy weights-only HDF5) load by topology through `weights` (application_options.h), and
//   - to_json() equals what Keras writes for the same arguments.
//
//   auto m = keras::applications::VGG16({.include_top = false, .weights = "vgg16_notop.h5",
//                                         .input_shape = {64, 64, 3}, .pooling = "avg"});
//   Tensor x = keras::applications::vgg16::preprocess_input(images);   // "caffe" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

using VGGOptions = ApplicationOptions;  // include_top: Flatten + fc1 + fc2 (4096, relu) + predictions

// Minimum input 32x32, default 224x224; errors as application_options.h says.
std::shared_ptr<Model> VGG16(const VGGOptions& options = {});
std::shared_ptr<Model> VGG19(const VGGOptions& options = {});

namespace vgg16 {
using imagenet_utils::decode_predictions;
using imagenet_utils::caffe::preprocess_input;  // "caffe" mode
}  // namespace vgg16
namespace vgg19 {
using imagenet_utils::decode_predictions;
using imagenet_utils::caffe::preprocess_input;  // "caffe" mode
}  // namespace vgg19

}  // namespace keras::applications
