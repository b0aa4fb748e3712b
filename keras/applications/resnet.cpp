#include "keras/applications/resnet.h"

#include <array>

#include "keras/applications/builder.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/elementwise_merge.h"
#include "layers/max_pooling2d.h"
#include "layers/zero_padding2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

KerasTensor bn(const KerasTensor& x, const std::string& name) {
  return L::BatchNormalization({.axis = 3, .epsilon = 1.001e-5, .name = name})(x);
}
KerasTensor relu(const KerasTensor& x, const std::string& name) {
  return L::Activation({.activation = "relu", .name = name})(x);
}
KerasTensor conv(const KerasTensor& x, int64_t filters, int64_t kernel, const std::string& name, int64_t stride = 1,
                 const std::string& padding = "valid", bool use_bias = true) {
  return L::Conv2D({.filters = filters, .kernel_size = kernel, .strides = stride, .padding = padding,
                    .use_bias = use_bias, .name = name})(x);
}

// Keras's residual_block_v1: 1x1 (strided) - 3x3 - 1x1 (4 x filters) with post-activation BN,
// a projection shortcut (_0_conv/_0_bn) when `conv_shortcut`.
KerasTensor block_v1(const KerasTensor& in, int64_t filters, int64_t stride, bool conv_shortcut, const std::string& name) {
  const KerasTensor shortcut = conv_shortcut ? bn(conv(in, 4 * filters, 1, name + "_0_conv", stride), name + "_0_bn") : in;
  auto x = relu(bn(conv(in, filters, 1, name + "_1_conv", stride), name + "_1_bn"), name + "_1_relu");
  x = relu(bn(conv(x, filters, 3, name + "_2_conv", 1, "same"), name + "_2_bn"), name + "_2_relu");
  x = bn(conv(x, 4 * filters, 1, name + "_3_conv"), name + "_3_bn");
  x = L::Add({.name = name + "_add"})({shortcut, x});
  return relu(x, name + "_out");
}

// Keras's residual_block_v2: pre-activation (_preact_bn/_preact_relu), 1x1 - padded 3x3
// (strided) - 1x1; the shortcut is a projection of the pre-activation, a 1x1 max pooling of
// the input when strided, or the input.
KerasTensor block_v2(const KerasTensor& in, int64_t filters, int64_t stride, bool conv_shortcut, const std::string& name,
                     detail::AutoNames& names) {
  const auto preact = relu(bn(in, name + "_preact_bn"), name + "_preact_relu");
  KerasTensor shortcut = in;
  if (conv_shortcut)
    shortcut = conv(preact, 4 * filters, 1, name + "_0_conv", stride);
  else if (stride > 1)
    shortcut = L::MaxPooling2D({.pool_size = 1, .strides = L::PairArg(stride), .name = names("MaxPooling2D")})(in);
  auto x = relu(bn(conv(preact, filters, 1, name + "_1_conv", 1, "valid", false), name + "_1_bn"), name + "_1_relu");
  x = L::ZeroPadding2D({.padding = 1, .name = name + "_2_pad"})(x);
  x = relu(bn(conv(x, filters, 3, name + "_2_conv", stride, "valid", false), name + "_2_bn"), name + "_2_relu");
  x = conv(x, 4 * filters, 1, name + "_3_conv");
  return L::Add({.name = name + "_out"})({shortcut, x});
}

// One stage "convN" of `blocks` blocks; v1 strides its first block by stride1, v2 its last.
KerasTensor stack(const KerasTensor& in, bool v2, int64_t filters, int blocks, int64_t stride1, const std::string& name,
                  detail::AutoNames& names) {
  KerasTensor x = in;
  for (int i = 1; i <= blocks; ++i) {
    const std::string block = name + "_block" + std::to_string(i);
    if (!v2)
      x = block_v1(x, filters, i == 1 ? stride1 : 1, i == 1, block);
    else
      x = block_v2(x, filters, i == blocks ? stride1 : 1, i == 1, block, names);
  }
  return x;
}

// Keras's ResNet(stack_fn, preact = v2, use_bias = true) with stages conv2..conv5 of
// `blocks` blocks (64, 128, 256, 512 filters).
std::shared_ptr<Model> build_resnet(const detail::Args& a, const std::array<int, 4>& blocks, bool v2,
                              const std::string& weights_name) {
  const auto [input, weights] = detail::start(a, 224, 32, "resnet", weights_name);
  detail::AutoNames names;
  auto x = L::ZeroPadding2D({.padding = 3, .name = "conv1_pad"})(input);
  x = conv(x, 64, 7, "conv1_conv", 2);
  if (!v2) x = relu(bn(x, "conv1_bn"), "conv1_relu");
  x = L::ZeroPadding2D({.padding = 1, .name = "pool1_pad"})(x);
  x = L::MaxPooling2D({.pool_size = 3, .strides = L::PairArg(2), .name = "pool1_pool"})(x);
  // v1 strides conv2 by 1 (after the stem's pooling) and the others by 2 in their first
  // block; v2 strides conv2..conv4 by 2 in their last block and conv5 by 1.
  const std::array<int64_t, 4> filters = {64, 128, 256, 512};
  for (size_t s = 0; s < 4; ++s) {
    const int64_t stride1 = v2 ? (s == 3 ? 1 : 2) : (s == 0 ? 1 : 2);
    x = stack(x, v2, filters[s], blocks[s], stride1, "conv" + std::to_string(s + 2), names);
  }
  if (v2) x = relu(bn(x, "post_bn"), "post_relu");
  x = detail::classifier_or_pooling(a, x, names, true, true);
  return detail::finish(a, input, x, weights);
}

}  // namespace

std::shared_ptr<Model> ResNet50(const ResNetOptions& o) {
  return build_resnet(detail::args_of("ResNet50", o, "resnet50"), {3, 4, 6, 3}, false, "resnet50");
}
std::shared_ptr<Model> ResNet101(const ResNetOptions& o) {
  return build_resnet(detail::args_of("ResNet101", o, "resnet101"), {3, 4, 23, 3}, false, "resnet101");
}
std::shared_ptr<Model> ResNet152(const ResNetOptions& o) {
  return build_resnet(detail::args_of("ResNet152", o, "resnet152"), {3, 8, 36, 3}, false, "resnet152");
}
std::shared_ptr<Model> ResNet50V2(const ResNetOptions& o) {
  return build_resnet(detail::args_of("ResNet50V2", o, "resnet50v2"), {3, 4, 6, 3}, true, "resnet50v2");
}
std::shared_ptr<Model> ResNet101V2(const ResNetOptions& o) {
  return build_resnet(detail::args_of("ResNet101V2", o, "resnet101v2"), {3, 4, 23, 3}, true, "resnet101v2");
}
std::shared_ptr<Model> ResNet152V2(const ResNetOptions& o) {
  return build_resnet(detail::args_of("ResNet152V2", o, "resnet152v2"), {3, 8, 36, 3}, true, "resnet152v2");
}

}  // namespace keras::applications
