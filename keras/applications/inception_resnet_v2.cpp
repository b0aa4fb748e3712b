#include "keras/applications/inception_resnet_v2.h"

#include <vector>

#include "keras/applications/builder.h"
#include "layers/activation.h"
#include "layers/average_pooling2d.h"
#include "layers/batch_normalization.h"
#include "layers/concatenate.h"
#include "layers/conv2d.h"
#include "layers/custom_scale_layer.h"
#include "layers/max_pooling2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

// Keras's inception_resnet_v2 module: an unnamed conv2d_bn takes the next automatic names.
class Builder {
 public:
  // Keras's conv2d_bn: Conv2D (no bias) - BatchNormalization (no scale) - relu, named
  // <name>, <name>_bn, <name>_ac, or automatically without a name.
  KerasTensor conv_bn(const KerasTensor& x, int64_t filters, L::PairArg kernel, int64_t stride = 1,
                      const std::string& padding = "same", const std::string& name = "") {
    auto y = L::Conv2D({.filters = filters, .kernel_size = kernel, .strides = L::PairArg(stride, stride),
                        .padding = padding, .use_bias = false, .name = or_auto(name, "", "Conv2D")})(x);
    y = L::BatchNormalization({.axis = 3, .scale = false, .name = or_auto(name, "_bn", "BatchNormalization")})(y);
    return L::Activation({.activation = "relu", .name = or_auto(name, "_ac", "Activation")})(y);
  }
  KerasTensor max_pool(const KerasTensor& x) {
    return L::MaxPooling2D({.pool_size = L::PairArg(3, 3), .strides = L::PairArg(2, 2), .name = names("MaxPooling2D")})(x);
  }
  static KerasTensor concat(const std::vector<KerasTensor>& xs, const std::string& name) {
    return L::Concatenate({.axis = 3, .name = name})(xs)[0];
  }

  // Keras's inception_resnet_block: x + scale * (1x1 conv with bias of the concatenated
  // branches), then relu unless `activate` is false (block8_10).
  KerasTensor block(const KerasTensor& x, double scale, const std::string& type, int index, bool activate = true) {
    std::vector<KerasTensor> branches;
    if (type == "block35") {
      branches.push_back(conv_bn(x, 32, 1));
      branches.push_back(conv_bn(conv_bn(x, 32, 1), 32, 3));
      branches.push_back(conv_bn(conv_bn(conv_bn(x, 32, 1), 48, 3), 64, 3));
    } else if (type == "block17") {
      branches.push_back(conv_bn(x, 192, 1));
      branches.push_back(conv_bn(conv_bn(conv_bn(x, 128, 1), 160, {1, 7}), 192, {7, 1}));
    } else {  // block8
      branches.push_back(conv_bn(x, 192, 1));
      branches.push_back(conv_bn(conv_bn(conv_bn(x, 192, 1), 224, {1, 3}), 256, {3, 1}));
    }
    const std::string name = type + "_" + std::to_string(index);
    auto up = L::Conv2D({.filters = x.shape.back(), .kernel_size = L::PairArg(1, 1), .padding = "same",
                         .name = name + "_conv"})(concat(branches, name + "_mixed"));
    auto y = L::CustomScaleLayer({.scale = scale, .name = names("CustomScaleLayer")})({x, up});
    return activate ? L::Activation({.activation = "relu", .name = name + "_ac"})(y) : y;
  }

  detail::AutoNames names;  // Keras's automatic names, in creation order

 private:
  std::string or_auto(const std::string& name, const std::string& suffix, const std::string& class_name) {
    return name.empty() ? names(class_name) : name + suffix;
  }
};

}  // namespace

std::shared_ptr<Model> InceptionResNetV2(const InceptionResNetV2Options& o) {
  const auto a = detail::args_of("InceptionResNetV2", o, "inception_resnet_v2");
  const auto [input, weights] = detail::start(a, 299, 75, "inception_resnet_v2", "inception_resnet_v2");
  Builder b;
  auto x = b.conv_bn(input, 32, 3, 2, "valid");
  x = b.conv_bn(x, 32, 3, 1, "valid");
  x = b.conv_bn(x, 64, 3);
  x = b.max_pool(x);
  x = b.conv_bn(x, 80, 1, 1, "valid");
  x = b.conv_bn(x, 192, 3, 1, "valid");
  x = b.max_pool(x);
  {  // mixed_5b: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | 3x3 average pool-1x1
    auto b0 = b.conv_bn(x, 96, 1);
    auto b1 = b.conv_bn(b.conv_bn(x, 48, 1), 64, 5);
    auto b2 = b.conv_bn(b.conv_bn(b.conv_bn(x, 64, 1), 96, 3), 96, 3);
    auto pool = L::AveragePooling2D({.pool_size = L::PairArg(3, 3), .strides = L::PairArg(1, 1), .padding = "same",
                                     .name = b.names("AveragePooling2D")})(x);
    x = b.concat({b0, b1, b2, b.conv_bn(pool, 64, 1)}, "mixed_5b");
  }
  for (int i = 1; i <= 10; ++i) x = b.block(x, 0.17, "block35", i);
  {  // mixed_6a: 3x3 (stride 2) | 1x1-3x3-3x3 (stride 2) | max pool
    auto b0 = b.conv_bn(x, 384, 3, 2, "valid");
    auto b1 = b.conv_bn(b.conv_bn(b.conv_bn(x, 256, 1), 256, 3), 384, 3, 2, "valid");
    x = b.concat({b0, b1, b.max_pool(x)}, "mixed_6a");
  }
  for (int i = 1; i <= 20; ++i) x = b.block(x, 0.1, "block17", i);
  {  // mixed_7a: 1x1-3x3 (stride 2) | 1x1-3x3 (stride 2) | 1x1-3x3-3x3 (stride 2) | max pool
    auto b0 = b.conv_bn(b.conv_bn(x, 256, 1), 384, 3, 2, "valid");
    auto b1 = b.conv_bn(b.conv_bn(x, 256, 1), 288, 3, 2, "valid");
    auto b2 = b.conv_bn(b.conv_bn(b.conv_bn(x, 256, 1), 288, 3), 320, 3, 2, "valid");
    x = b.concat({b0, b1, b2, b.max_pool(x)}, "mixed_7a");
  }
  for (int i = 1; i <= 9; ++i) x = b.block(x, 0.2, "block8", i);
  x = b.block(x, 1.0, "block8", 10, false);
  x = b.conv_bn(x, 1536, 1, 1, "same", "conv_7b");
  x = detail::classifier_or_pooling(a, x, b.names, true, false);
  return detail::finish(a, input, x, weights);
}

}  // namespace keras::applications
