#include "keras/applications/xception.h"

#include "keras/applications/builder.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/elementwise_merge.h"
#include "layers/max_pooling2d.h"
#include "layers/separable_conv2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

class Builder {
 public:
  KerasTensor bn(const KerasTensor& x, const std::string& name = "") {
    return L::BatchNormalization({.name = name.empty() ? names("BatchNormalization") : name})(x);
  }
  static KerasTensor relu(const KerasTensor& x, const std::string& name) {
    return L::Activation({.activation = "relu", .name = name})(x);
  }
  // SeparableConv2D 3x3 "same" without bias, then its BatchNormalization (<name>_bn).
  KerasTensor sepconv_bn(const KerasTensor& x, int64_t filters, const std::string& name) {
    auto y = L::SeparableConv2D({.filters = filters, .kernel_size = 3, .padding = "same", .use_bias = false,
                                 .name = name})(x);
    return bn(y, name + "_bn");
  }
  // The strided 1x1 projection of the residual, named automatically.
  KerasTensor residual(const KerasTensor& x, int64_t filters) {
    auto y = L::Conv2D({.filters = filters, .kernel_size = 1, .strides = 2, .padding = "same", .use_bias = false,
                        .name = names("Conv2D")})(x);
    return bn(y);
  }
  KerasTensor add(const KerasTensor& a, const KerasTensor& b) { return L::Add({.name = names("Add")})({a, b}); }
  // Entry-flow blocks 2-4 and block 13: [relu] sepconv-bn, relu, sepconv-bn, 3x3/2 max pooling,
  // plus the projected residual.
  KerasTensor down_block(const KerasTensor& x, int block, int64_t filters1, int64_t filters2, bool first_relu) {
    const std::string p = "block" + std::to_string(block);
    auto res = residual(x, filters2);
    auto y = first_relu ? relu(x, p + "_sepconv1_act") : x;
    y = sepconv_bn(y, filters1, p + "_sepconv1");
    y = sepconv_bn(relu(y, p + "_sepconv2_act"), filters2, p + "_sepconv2");
    y = L::MaxPooling2D({.pool_size = 3, .strides = L::PairArg(2), .padding = "same", .name = p + "_pool"})(y);
    return add(y, res);
  }
  // Middle-flow blocks 5-12: three relu-sepconv-bn (728) plus the identity.
  KerasTensor middle_block(const KerasTensor& x, int block) {
    const std::string p = "block" + std::to_string(block);
    KerasTensor y = x;
    for (int i = 1; i <= 3; ++i) {
      const std::string s = p + "_sepconv" + std::to_string(i);
      y = sepconv_bn(relu(y, s + "_act"), 728, s);
    }
    return add(y, x);
  }
  detail::AutoNames names;  // Keras's automatic names, in creation order
};

}  // namespace

std::shared_ptr<Model> Xception(const XceptionOptions& o) {
  const auto a = detail::args_of("Xception", o, "xception");
  const auto [input, weights] = detail::start(a, 299, 71, "xception", "xception");
  Builder b;
  auto x = L::Conv2D({.filters = 32, .kernel_size = 3, .strides = 2, .use_bias = false, .name = "block1_conv1"})(input);
  x = b.relu(b.bn(x, "block1_conv1_bn"), "block1_conv1_act");
  x = L::Conv2D({.filters = 64, .kernel_size = 3, .use_bias = false, .name = "block1_conv2"})(x);
  x = b.relu(b.bn(x, "block1_conv2_bn"), "block1_conv2_act");
  x = b.down_block(x, 2, 128, 128, false);
  x = b.down_block(x, 3, 256, 256, true);
  x = b.down_block(x, 4, 728, 728, true);
  for (int block = 5; block <= 12; ++block) x = b.middle_block(x, block);
  x = b.down_block(x, 13, 728, 1024, true);
  x = b.sepconv_bn(x, 1536, "block14_sepconv1");
  x = b.relu(x, "block14_sepconv1_act");
  x = b.sepconv_bn(x, 2048, "block14_sepconv2");
  x = b.relu(x, "block14_sepconv2_act");
  x = detail::classifier_or_pooling(a, x, b.names, true, false);
  return detail::finish(a, input, x, weights);
}

}  // namespace keras::applications
