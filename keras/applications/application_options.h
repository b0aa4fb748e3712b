// The arguments the keras.applications constructors share, under Keras's names, in Keras's
// order and with Keras's defaults, except `weights` (below). VGG16/19, ResNet50/101/152 (v1 and
// v2), DenseNet121/169/201, InceptionV3, InceptionResNetV2, Xception, NASNetMobile/Large and
// EfficientNetB0..B7 take exactly these; MobileNet, MobileNetV2 and MobileNetV3Small/Large add
// their own first (mobilenet.h, mobilenet_v2.h, mobilenet_v3.h), ConvNeXtTiny..XLarge and
// EfficientNetV2* include_preprocessing (convnext.h, efficientnet_v2.h). Keras's
// input_tensor is not offered: call the returned model on a tensor instead.
//
// weights: "" is Keras's None (random initialisation), the default here, because Keras's
//   default "imagenet" downloads and this library never downloads. A path loads that file into
//   the new model by topology (model.load_weights: legacy weights-only HDF5 such as
//   resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5, whole-model .h5, or .weights.h5).
//   "imagenet" reads the file Keras would download from Keras's download cache
//   ($KERAS_HOME/models, else ~/.keras/models), with Keras's ImageNet checks (3 channels,
//   classes 1000 and the default input size with include_top); IOError naming the file and its
//   URL when it is not there.
//
// Every constructor raises Keras's ValueErrors (`<Constructor>: expected <x>, got <y>. <hint>`)
// for: weights neither "", "imagenet" nor an existing file; classes != 1000 with "imagenet" and
// include_top; classes < 1 with include_top; an input_shape that is not (H, W, C), smaller than
// the minimum, not static with include_top, or not (S, S, 3) with "imagenet" and include_top;
// a classifier_activation other than softmax or linear with weights; and, stricter than Keras
// (which ignores other values), a pooling other than "", "avg" or "max". Files that do not fit
// the model raise what Model::load_weights raises, and nothing is built.
#pragma once
#include <string>

#include "backend/shape.h"

namespace keras::applications {

struct ApplicationOptions {
  bool include_top = true;  // the ImageNet classifier head (else features, see pooling)
  std::string weights;
  // (H, W, C) without the batch axis; -1 for an unknown H or W (include_top = false only).
  // Empty is Keras's None: (S, S, 3) at the family's default size S with include_top, else
  // (-1, -1, 3). H and W must be at least the family's minimum (32; InceptionV3 and
  // InceptionResNetV2 75; Xception 71).
  Shape input_shape;
  std::string pooling;  // include_top = false: "" (4-D features), "avg" or "max" (2-D features)
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";  // "linear" or "" (Keras's None): logits
  std::string name;  // "" : Keras's default name of the constructor ("resnet50", ...)
};

}  // namespace keras::applications
