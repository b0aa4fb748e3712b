// ResNet50/101/152 (keras.applications.resnet; He et al., CVPR 2015) and ResNet50V2/101V2/
// 152V2 (keras.applications.resnet_v2; He et al., ECCV 2016), built with Keras's layer names
// (conv1_pad, conv1_conv, ..., conv2_block1_0_conv, ..., conv5_block3_out, post_bn, avg_pool,
// predictions), layer order and weight order, so that the weights files Keras publishes
// (resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5, resnet50v2_..., legacy weights-only
// HDF5) load by topology through `weights` (application_options.h), and to_json() equals what
// Keras writes for the same arguments.
//
//   auto base = keras::applications::ResNet50({.include_top = false, .weights = "resnet50_notop.h5",
//                                              .input_shape = {128, 128, 3}, .pooling = "avg"});
//   Tensor x = keras::applications::resnet::preprocess_input(images);     // "caffe" mode
//   Tensor y = keras::applications::resnet_v2::preprocess_input(images);  // "tf" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

using ResNetOptions = ApplicationOptions;

// Minimum input 32x32, default 224x224; errors as application_options.h says.
std::shared_ptr<Model> ResNet50(const ResNetOptions& options = {});
std::shared_ptr<Model> ResNet101(const ResNetOptions& options = {});
std::shared_ptr<Model> ResNet152(const ResNetOptions& options = {});
std::shared_ptr<Model> ResNet50V2(const ResNetOptions& options = {});
std::shared_ptr<Model> ResNet101V2(const ResNetOptions& options = {});
std::shared_ptr<Model> ResNet152V2(const ResNetOptions& options = {});

namespace resnet {
using imagenet_utils::decode_predictions;
using imagenet_utils::caffe::preprocess_input;  // "caffe" mode
}  // namespace resnet
namespace resnet50 {
using imagenet_utils::decode_predictions;
using resnet::preprocess_input;
}  // namespace resnet50
namespace resnet_v2 {
using imagenet_utils::decode_predictions;
using imagenet_utils::tf::preprocess_input;  // "tf" mode
}  // namespace resnet_v2

}  // namespace keras::applications
