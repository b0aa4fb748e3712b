// ResNet-20 for small images (He et al. 2016, CIFAR variant): a 3x3 stem, 3 stages of 3 basic
// blocks with 16/32/64 filters (conv3x3-BN-ReLU-conv3x3-BN plus shortcut, then ReLU; the first
// block of stages 2 and 3 has stride 2 and a 1x1 conv + BN shortcut), global average pooling and a
// Dense classifier. Built from the framework's own layers as a functional Model.
#pragma once
#include <memory>
#include <string>

#include "keras/models/model.h"

namespace keras::applications {

struct ResNet20Options {
  Shape input_shape = {32, 32, 3};         // NHWC without the batch axis
  int64_t classes = 10;
  std::string classifier_activation = "softmax";  // "linear" gives logits
  std::string name = "resnet20";
};

// Throws ValueError for classes < 1 or an input that is not (H, W, C).
std::shared_ptr<Model> ResNet20(const ResNet20Options& options = {});

}  // namespace keras::applications
