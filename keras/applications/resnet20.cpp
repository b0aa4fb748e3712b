#include "keras/applications/resnet20.h"

#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/elementwise_merge.h"
#include "layers/global_average_pooling2d.h"
#include "layers/relu.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

KerasTensor conv_bn(const KerasTensor& x, int64_t filters, int64_t kernel, int64_t stride) {
  auto y = L::Conv2D({.filters = filters, .kernel_size = kernel, .strides = stride, .padding = "same",
                      .use_bias = false, .kernel_initializer = "he_normal"})(x);
  return L::BatchNormalization({.momentum = 0.9, .epsilon = 1e-5})(y);
}

KerasTensor basic_block(const KerasTensor& x, int64_t filters, int64_t stride) {
  auto y = L::ReLU()(conv_bn(x, filters, 3, stride));
  y = conv_bn(y, filters, 3, 1);
  bool reshape = stride != 1 || x.shape.back() != filters;
  auto shortcut = reshape ? conv_bn(x, filters, 1, stride) : x;
  return L::ReLU()(L::Add()({y, shortcut}));
}
}  // namespace

std::shared_ptr<Model> ResNet20(const ResNet20Options& o) {
  if (o.classes < 1) fail<ValueError>("ResNet20", "classes >= 1", std::to_string(o.classes));
  if (o.input_shape.size() != 3) fail<ValueError>("ResNet20", "an input shape (H, W, C)", shape_str(o.input_shape));
  auto inputs = L::Input(o.input_shape);
  auto x = L::ReLU()(conv_bn(inputs, 16, 3, 1));
  for (auto [filters, stride] : {std::pair<int64_t, int64_t>{16, 1}, {32, 2}, {64, 2}})
    for (int block = 0; block < 3; ++block) x = basic_block(x, filters, block == 0 ? stride : 1);
  x = L::GlobalAveragePooling2D()(x);
  auto outputs = L::Dense({.units = o.classes, .activation = o.classifier_activation})(x);
  return std::make_shared<Model>(inputs, outputs, o.name);
}

}  // namespace keras::applications
