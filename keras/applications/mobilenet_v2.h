// MobileNetV2 (keras.applications.mobilenet_v2; Sandler et al., CVPR 2018), built with Keras's
// layer names (Conv1, bn_Conv1, Conv1_relu, expanded_conv_depthwise, ..., block_16_project_BN,
// Conv_1, Conv_1_bn, out_relu, predictions), layer order and weight order, so that the weights
// files Keras publishes (mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224[_no_top].h5,
// legacy weights-only HDF5) load by topology through `weights` (application_options.h), and
// to_json() equals what Keras writes for the same arguments.
//
//   auto m = keras::applications::MobileNetV2({.input_shape = {96, 96, 3}, .alpha = 1.0,
//       .include_top = false, .weights = "path.h5", .pooling = "avg"});
//   Tensor x = keras::applications::mobilenet_v2::preprocess_input(images);   // "tf" mode
#pragma once
#include <memory>
#include <string>

#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

// Keras's arguments in Keras's order (input_tensor aside); the shared ones mean what
// application_options.h says.
struct MobileNetV2Options {
  Shape input_shape;  // min 32x32; empty: (224, 224, 3) with include_top, else (-1, -1, 3)
  // Width multiplier: filters scaled and rounded to multiples of 8; the last 1x1 convolution
  // keeps 1280 filters unless alpha > 1.
  double alpha = 1.0;
  bool include_top = true;  // GlobalAveragePooling2D + Dense predictions
  std::string weights;
  std::string pooling;
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  std::string name;  // "" : "mobilenetv2_<alpha, 2 decimals>_<rows>", as Keras ("mobilenetv2_1.00_224")
};

// The errors of application_options.h, and with "imagenet": alpha one of 0.35, 0.5, 0.75, 1.0,
// 1.3, 1.4 (ValueError). Keras's file for a square input of 96, 128, 160, 192 or 224 rows, else
// the 224 one (Keras warns; this says nothing).
std::shared_ptr<Model> MobileNetV2(const MobileNetV2Options& options = {});

namespace mobilenet_v2 {
using imagenet_utils::decode_predictions;
using imagenet_utils::tf::preprocess_input;  // "tf" mode
}  // namespace mobilenet_v2

}  // namespace keras::applications
