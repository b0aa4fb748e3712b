// MobileNet (keras.applications.mobilenet; Howard et al., 2017), built with Keras's layer names
// (conv1, conv1_bn, conv1_relu, conv_dw_1 ... conv_pw_13_relu, conv_preds, reshape_2,
// predictions), layer order and weight order, so that the weights files Keras publishes
// (mobilenet_1_0_224_tf[_no_top].h5, legacy weights-only HDF5) load by topology through
// `weights` (application_options.h), and to_json() equals what Keras writes for the same
// arguments.
//
//   auto m = keras::applications::MobileNet({.input_shape = {128, 128, 3}, .alpha = 0.5,
//                                            .include_top = false, .pooling = "avg"});
//   Tensor x = keras::applications::mobilenet::preprocess_input(images);   // "tf" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

// Keras's arguments in Keras's order (input_tensor aside); the shared ones mean what
// application_options.h says.
struct MobileNetOptions {
  Shape input_shape;  // min 32x32; empty: (224, 224, 3) with include_top, else (-1, -1, 3)
  double alpha = 1.0;  // width multiplier: int(filters * alpha) filters in every layer
  int64_t depth_multiplier = 1;  // of the depthwise convolutions
  double dropout = 1e-3;  // of the classifier head
  bool include_top = true;  // GlobalAveragePooling2D (keepdims) - Dropout - 1x1 conv_preds - Reshape - Activation
  std::string weights;
  std::string pooling;
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  std::string name;  // "" : "mobilenet_<alpha, 2 decimals>_<rows>", as Keras ("mobilenet_1.00_224")
};

// The errors of application_options.h, and with "imagenet": depth_multiplier 1 and alpha one
// of 0.25, 0.5, 0.75, 1.0 (ValueError). Keras's file for a square input of 128, 160, 192 or
// 224 rows, else the 224 one (Keras warns; this says nothing).
std::shared_ptr<Model> MobileNet(const MobileNetOptions& options = {});

namespace mobilenet {
using imagenet_utils::decode_predictions;
using imagenet_utils::tf::preprocess_input;  // "tf" mode
}  // namespace mobilenet

}  // namespace keras::applications
