// MobileNetV3Small and MobileNetV3Large (keras.applications.mobilenet_v3; Howard et al., ICCV
// 2019), built with Keras 3's layer names (rescaling, conv, conv_bn, activation, expanded_conv_
// depthwise_pad, ..., expanded_conv_10_squeeze_excite_mul, conv_1, conv_1_bn, conv_2, logits,
// predictions, and Keras's automatic re_lu_N / activation_N / add_N / multiply_N), layer order and
// weight order, so that the weights files Keras publishes (weights_mobilenet_v3_small_224_1.0_
// float[_no_top_v2].h5, legacy weights-only HDF5) load by topology through `weights`
// (application_options.h), and to_json() equals what Keras writes for the same arguments.
//
// Preprocessing is part of the model (include_preprocessing: Rescaling(1/127.5, -1), pixels in
// [0, 255]); mobilenet_v3::preprocess_input is Keras's placeholder that returns its input.
// hard_swish is Activation("hard_silu"); the squeeze-and-excite gate is Keras's hard_sigmoid,
// ReLU(6)(x + 3) * (1/6), the two arithmetic steps Keras 3 operation nodes (Add, Multiply).
//
//   auto m = keras::applications::MobileNetV3Small({.input_shape = {96, 96, 3}, .alpha = 0.75,
//       .include_top = false, .pooling = "avg"});
#pragma once
#include <memory>
#include <string>

#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

// Keras's arguments in Keras's order (input_tensor aside); the shared ones mean what
// application_options.h says, except input_shape (below) and that the ImageNet weights are
// loaded for any input size (Keras has only 224x224 files, and warns).
struct MobileNetV3Options {
  // (H, W, C), H and W at least 32 where known (ValueError). Empty is Keras's None: (-1, -1, 3),
  // with include_top too (the head pools globally before its 1x1 convolutions). Unlike the other
  // families no size or channel count is imposed with "imagenet".
  Shape input_shape;
  // Width multiplier: block filters are depth(filters * alpha), rounded to multiples of 8; the
  // head's conv_2 (1024 / 1280 filters) grows only when alpha > 1.
  double alpha = 1.0;
  // No squeeze-and-excite, 3x3 depthwise kernels and ReLU everywhere (the "minimalistic" models).
  bool minimalistic = false;
  bool include_top = true;  // GAP (keepdims) - conv_2 - activation - Dropout - logits - Flatten - predictions
  std::string weights;
  int64_t classes = 1000;
  std::string pooling;  // include_top = false: "", "avg" (avg_pool) or "max" (max_pool)
  double dropout_rate = 0.2;  // of the head; 0 leaves the Dropout layer out
  std::string classifier_activation = "softmax";
  bool include_preprocessing = true;  // Rescaling(1/127.5, offset -1) first: inputs are pixels in [0, 255]
  std::string name;  // "" : "MobileNetV3Small" / "MobileNetV3Large", as Keras
};

// The errors of application_options.h (without its input-size and channel rules: H, W >= 32 and
// 3 entries only), and with "imagenet": alpha 0.75 or 1.0, or 1.0 with minimalistic
// (ValueError). The file for weights "imagenet" is Keras's 224 one whatever the input size:
// weights_mobilenet_v3_<small|large>[_minimalistic]_224_<alpha>_float[_no_top_v2].h5.
std::shared_ptr<Model> MobileNetV3Small(const MobileNetV3Options& options = {});
std::shared_ptr<Model> MobileNetV3Large(const MobileNetV3Options& options = {});

namespace mobilenet_v3 {
using imagenet_utils::decode_predictions;
using imagenet_utils::identity::preprocess_input;  // the models rescale their own inputs
}  // namespace mobilenet_v3

namespace detail {
// Keras's module-level builder mobilenet_v3.MobileNetV3(stack_fn, last_point_ch, ...): the Small
// ("small") or Large ("large") stack with `last_point_ch` filters in conv_2 (before the alpha > 1
// widening). The public constructors pass 1024 and 1280. Internal (tests build the weighted
// tiny fixture, a Small with a narrowed conv_2, through it).
std::shared_ptr<Model> MobileNetV3(const std::string& model_type, int64_t last_point_ch,
                                   const MobileNetV3Options& options);
}  // namespace detail

}  // namespace keras::applications
