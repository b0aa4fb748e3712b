// keras.applications.imagenet_utils: the input side every ImageNet model of the zoo shares.
//
//   Tensor x = ...;                                   // (N, H, W, 3) RGB pixels in [0, 255]
//   x = keras::applications::imagenet_utils::preprocess_input(x, {.mode = "torch"});
//   x = keras::applications::resnet_v2::preprocess_input(x);   // a family's own mode
//
// Also obtain_input_shape, correct_pad and validate_activation, the argument checks and padding
// rule the model constructors share (Keras's functions of the same names, channels_last only:
// the layers of this framework are channels_last).
#pragma once
#include <string>
#include <utility>

#include "backend/tensor.h"

namespace keras::applications::imagenet_utils {

struct PreprocessOptions {
  // "caffe": RGB -> BGR, then each channel minus the ImageNet mean (103.939, 116.779, 123.68),
  //          no scaling (VGG, ResNet v1);
  // "tf":    x / 127.5 - 1, into [-1, 1] (ResNet v2, MobileNet, MobileNetV2, InceptionV3, Xception);
  // "torch": x / 255, then each channel minus (0.485, 0.456, 0.406) and divided by
  //          (0.229, 0.224, 0.225) (DenseNet).
  std::string mode = "caffe";
  // "channels_last" (the channel axis is the last) or "channels_first" (axis 0 of a 3-D input,
  // axis 1 otherwise), as Keras's data_format.
  std::string data_format = "channels_last";
};

// Keras's imagenet_utils.preprocess_input on a batch (or one image) of pixels in [0, 255]:
// a new tensor, `x` is unchanged. Floating inputs keep their dtype, integer ones become float32
// (NumPy inputs in Keras). Built from keras::ops, so it is differentiable and runs where `x`
// lives. ValueError for an unknown mode or data_format, or, in "caffe" and "torch" modes, a
// channel axis that does not have 3 entries.
Tensor preprocess_input(const Tensor& x, const PreprocessOptions& options = {});

// preprocess_input in one mode, as the families export it: `namespace vgg16 { using
// imagenet_utils::caffe::preprocess_input; }` gives vgg16::preprocess_input(x[, data_format]).
namespace caffe {
inline Tensor preprocess_input(const Tensor& x, const std::string& data_format = "channels_last") {
  return imagenet_utils::preprocess_input(x, {.mode = "caffe", .data_format = data_format});
}
}  // namespace caffe
namespace tf {
inline Tensor preprocess_input(const Tensor& x, const std::string& data_format = "channels_last") {
  return imagenet_utils::preprocess_input(x, {.mode = "tf", .data_format = data_format});
}
}  // namespace tf
namespace torch {
inline Tensor preprocess_input(const Tensor& x, const std::string& data_format = "channels_last") {
  return imagenet_utils::preprocess_input(x, {.mode = "torch", .data_format = data_format});
}
}  // namespace torch
// The families that preprocess inside the model (MobileNetV3, ConvNeXt: Keras's placeholder
// preprocess_input): `x` itself, `data_format` accepted and ignored, as in Keras.
namespace identity {
inline Tensor preprocess_input(const Tensor& x, const std::string& data_format = "channels_last") {
  (void)data_format;
  return x;
}
}  // namespace identity

// Keras's imagenet_utils.obtain_input_shape for channels_last, with Keras's ValueErrors (named
// after `where`): the (H, W, C) input shape a model is built for. `input_shape` empty is Keras's
// None: (default_size, default_size, 3) when `require_flatten` (include_top), else (-1, -1, 3)
// (-1 is None: any size). A given shape must have 3 entries and H, W >= min_size where known;
// with ImageNet weights, 3 channels and, when require_flatten, exactly the default shape.
// `require_flatten` wants static H and W.
Shape obtain_input_shape(const std::string& where, const Shape& input_shape, int64_t default_size, int64_t min_size,
                         bool require_flatten, bool imagenet_weights);

// Keras's correct_pad: the ((top, bottom), (left, right)) zero padding that lets a strided
// valid convolution of `kernel_size` see what TensorFlow's "same" would, for an (N, H, W, C)
// input (H or W -1: unknown, treated as even).
std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> correct_pad(const Shape& input_shape,
                                                                                  int64_t kernel_size);

// Keras's validate_activation: with pretrained weights (`weights` not empty) the classifier may
// only be "softmax" or linear ("linear", "" or "None"); ValueError naming `where` otherwise.
void validate_activation(const std::string& where, const std::string& classifier_activation,
                         const std::string& weights);

}  // namespace keras::applications::imagenet_utils
