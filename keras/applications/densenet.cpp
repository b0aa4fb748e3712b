#include "keras/applications/densenet.h"

#include <array>

#include "keras/applications/builder.h"
#include "layers/activation.h"
#include "layers/average_pooling2d.h"
#include "layers/batch_normalization.h"
#include "layers/concatenate.h"
#include "layers/conv2d.h"
#include "layers/max_pooling2d.h"
#include "layers/zero_padding2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

KerasTensor bn_relu(const KerasTensor& x, const std::string& bn_name, const std::string& relu_name) {
  auto y = L::BatchNormalization({.axis = 3, .epsilon = 1.001e-5, .name = bn_name})(x);
  return L::Activation({.activation = "relu", .name = relu_name})(y);
}
KerasTensor conv(const KerasTensor& x, int64_t filters, int64_t kernel, const std::string& name,
                 const std::string& padding = "valid", int64_t stride = 1) {
  return L::Conv2D({.filters = filters, .kernel_size = kernel, .strides = stride, .padding = padding, .use_bias = false,
                    .name = name})(x);
}

// Keras's conv_block: BN-relu-1x1 (4 x growth) - BN-relu-3x3 (growth), concatenated to x.
KerasTensor conv_block(const KerasTensor& x, int64_t growth_rate, const std::string& name) {
  auto y = conv(bn_relu(x, name + "_0_bn", name + "_0_relu"), 4 * growth_rate, 1, name + "_1_conv");
  y = conv(bn_relu(y, name + "_1_bn", name + "_1_relu"), growth_rate, 3, name + "_2_conv", "same");
  return L::Concatenate({.axis = 3, .name = name + "_concat"})({x, y});
}

// Keras's transition_block: BN-relu, a 1x1 conv to channels x reduction, 2x2 average pooling.
KerasTensor transition_block(const KerasTensor& x, double reduction, const std::string& name) {
  auto y = bn_relu(x, name + "_bn", name + "_relu");
  y = conv(y, static_cast<int64_t>(static_cast<double>(y.shape.back()) * reduction), 1, name + "_conv");
  return L::AveragePooling2D({.pool_size = 2, .strides = L::PairArg(2), .name = name + "_pool"})(y);
}

std::shared_ptr<Model> build_densenet(const detail::Args& a, const std::array<int, 4>& blocks, const std::string& stem) {
  const auto [input, weights] = detail::start(a, 224, 32, "densenet", stem);
  detail::AutoNames names;
  auto x = L::ZeroPadding2D({.padding = 3, .name = names("ZeroPadding2D")})(input);
  x = conv(x, 64, 7, "conv1_conv", "valid", 2);
  x = bn_relu(x, "conv1_bn", "conv1_relu");
  x = L::ZeroPadding2D({.padding = 1, .name = names("ZeroPadding2D")})(x);
  x = L::MaxPooling2D({.pool_size = 3, .strides = L::PairArg(2), .name = "pool1"})(x);
  for (int stage = 0; stage < 4; ++stage) {
    const std::string conv_name = "conv" + std::to_string(stage + 2);
    for (int i = 1; i <= blocks[static_cast<size_t>(stage)]; ++i)
      x = conv_block(x, 32, conv_name + "_block" + std::to_string(i));
    if (stage < 3) x = transition_block(x, 0.5, "pool" + std::to_string(stage + 2));
  }
  x = bn_relu(x, "bn", "relu");
  x = detail::classifier_or_pooling(a, x, names, true, true);
  return detail::finish(a, input, x, weights);
}

}  // namespace

std::shared_ptr<Model> DenseNet121(const DenseNetOptions& o) {
  return build_densenet(detail::args_of("DenseNet121", o, "densenet121"), {6, 12, 24, 16}, "densenet121");
}
std::shared_ptr<Model> DenseNet169(const DenseNetOptions& o) {
  return build_densenet(detail::args_of("DenseNet169", o, "densenet169"), {6, 12, 32, 32}, "densenet169");
}
std::shared_ptr<Model> DenseNet201(const DenseNetOptions& o) {
  return build_densenet(detail::args_of("DenseNet201", o, "densenet201"), {6, 12, 48, 32}, "densenet201");
}

}  // namespace keras::applications
