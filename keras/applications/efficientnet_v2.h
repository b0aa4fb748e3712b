// EfficientNetV2B0..B3, S, M, L (keras.applications.efficientnet_v2; Tan and Le, ICML 2021),
// built with Keras's layer names (rescaling, normalization, stem_conv, stem_bn, ...,
// block1a_project_conv, ..., block4a_dwconv2, ..., top_conv, top_bn, top_activation, avg_pool,
// top_dropout, predictions), layer order and weight order, so that the weights files Keras
// publishes (efficientnetv2-b0.h5, efficientnetv2-s_notop.h5, ..., legacy weights-only HDF5)
// load by topology through `weights` (application_options.h), and to_json() equals what Keras
// writes for the same arguments.
//
// The preprocessing is inside the model (include_preprocessing): B0..B3 Rescaling(1/255) then
// Normalization by ImageNet's mean and variance (in the config, no weights), S/M/L
// Rescaling(1/128, offset -1). Inputs are float pixels in [0, 255];
// efficientnet_v2::preprocess_input is the identity.
//
//   auto base = keras::applications::EfficientNetV2S({.include_top = false, .weights = "efficientnetv2-s_notop.h5",
//                                                     .input_shape = {128, 128, 3}, .pooling = "avg"});
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

// Keras's arguments in Keras's order (input_tensor aside); the shared ones mean what
// application_options.h says.
struct EfficientNetV2Options {
  bool include_top = true;
  std::string weights;
  Shape input_shape;
  std::string pooling;
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  // The Rescaling (and for B0..B3 with 3 channels the Normalization) in front; false: the model
  // starts at stem_conv and wants inputs preprocessed as those layers would.
  bool include_preprocessing = true;
  std::string name;  // "" : Keras's default, "efficientnetv2-b0", ..., "efficientnetv2-s", ...
};

// Minimum input 32x32; default sizes B0 224, B1 240, B2 260, B3 300, S 384, M 480, L 480.
// Errors as application_options.h says. With "imagenet" the file read from Keras's cache is
// <default name>.h5 or <default name>_notop.h5
// (https://storage.googleapis.com/tensorflow/keras-applications/efficientnet_v2/...).
// Another `name` only names the model (Keras 3.15 looks its block table up by the name and
// raises KeyError for any name but the default).
std::shared_ptr<Model> EfficientNetV2B0(const EfficientNetV2Options& options = {});
std::shared_ptr<Model> EfficientNetV2B1(const EfficientNetV2Options& options = {});
std::shared_ptr<Model> EfficientNetV2B2(const EfficientNetV2Options& options = {});
std::shared_ptr<Model> EfficientNetV2B3(const EfficientNetV2Options& options = {});
std::shared_ptr<Model> EfficientNetV2S(const EfficientNetV2Options& options = {});
std::shared_ptr<Model> EfficientNetV2M(const EfficientNetV2Options& options = {});
std::shared_ptr<Model> EfficientNetV2L(const EfficientNetV2Options& options = {});

namespace efficientnet_v2 {
using imagenet_utils::decode_predictions;
using imagenet_utils::identity::preprocess_input;  // the models normalise their own inputs
}  // namespace efficientnet_v2

}  // namespace keras::applications
