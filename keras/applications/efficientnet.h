// EfficientNetB0..B7 (keras.applications.efficientnet; Tan and Le, ICML 2019), built with
// Keras's layer names (rescaling, normalization, stem_conv_pad, stem_conv, stem_bn, ...,
// block1a_dwconv, ..., block6b_drop, block6b_add, ..., top_conv, top_bn, top_activation,
// avg_pool, top_dropout, predictions), layer order and weight order, so that the weights files
// Keras publishes (efficientnetb0.h5, efficientnetb0_notop.h5, ..., legacy weights-only HDF5)
// load by topology through `weights` (application_options.h), and to_json() equals what Keras
// writes for the same arguments.
//
// The preprocessing is inside the model, as in Keras: Rescaling(1/255), then a Normalization
// whose mean and variance are weights (zeros and ones until a weights file sets them: Keras's
// ImageNet files carry ImageNet's statistics), and with weights "imagenet" a Rescaling by
// 1/sqrt(ImageNet std) per channel (Keras's correction of those files' statistics). Inputs are
// float pixels in [0, 255]; efficientnet::preprocess_input is the identity.
//
//   auto base = keras::applications::EfficientNetB0({.include_top = false,
//       .weights = "efficientnetb0_notop.h5", .input_shape = {128, 128, 3}, .pooling = "avg"});
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

// Keras's EfficientNetB0..B7 take exactly the shared arguments (input_tensor aside).
using EfficientNetOptions = ApplicationOptions;

// Minimum input 32x32; default sizes B0 224, B1 240, B2 260, B3 300, B4 380, B5 456, B6 528,
// B7 600; default names "efficientnetb0".."efficientnetb7". Errors as application_options.h
// says. With "imagenet" the file read from Keras's cache is <default name>.h5 or
// <default name>_notop.h5 (https://storage.googleapis.com/keras-applications/...), whatever
// `name` is (Keras would take `name` for the file name too, and find no such file to download).
std::shared_ptr<Model> EfficientNetB0(const EfficientNetOptions& options = {});
std::shared_ptr<Model> EfficientNetB1(const EfficientNetOptions& options = {});
std::shared_ptr<Model> EfficientNetB2(const EfficientNetOptions& options = {});
std::shared_ptr<Model> EfficientNetB3(const EfficientNetOptions& options = {});
std::shared_ptr<Model> EfficientNetB4(const EfficientNetOptions& options = {});
std::shared_ptr<Model> EfficientNetB5(const EfficientNetOptions& options = {});
std::shared_ptr<Model> EfficientNetB6(const EfficientNetOptions& options = {});
std::shared_ptr<Model> EfficientNetB7(const EfficientNetOptions& options = {});

namespace efficientnet {
using imagenet_utils::decode_predictions;
using imagenet_utils::identity::preprocess_input;  // the models normalise their own inputs
}  // namespace efficientnet

}  // namespace keras::applications
