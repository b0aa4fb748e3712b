#include "keras/applications/inception_v3.h"

#include <vector>

#include "keras/applications/builder.h"
#include "layers/activation.h"
#include "layers/average_pooling2d.h"
#include "layers/batch_normalization.h"
#include "layers/concatenate.h"
#include "layers/conv2d.h"
#include "layers/max_pooling2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

// Keras's inception_v3 builder: every layer but the merges is named automatically, in the
// order Keras creates them.
class Builder {
 public:
  // Keras's conv2d_bn: Conv2D (no bias) - BatchNormalization (no scale) - relu.
  KerasTensor conv_bn(const KerasTensor& x, int64_t filters, int64_t rows, int64_t cols, int64_t stride = 1,
                      const std::string& padding = "same") {
    auto y = L::Conv2D({.filters = filters, .kernel_size = L::PairArg(rows, cols), .strides = stride,
                        .padding = padding, .use_bias = false, .name = names("Conv2D")})(x);
    y = L::BatchNormalization({.axis = 3, .scale = false, .name = names("BatchNormalization")})(y);
    return L::Activation({.activation = "relu", .name = names("Activation")})(y);
  }
  KerasTensor max_pool(const KerasTensor& x) {
    return L::MaxPooling2D({.pool_size = 3, .strides = L::PairArg(2), .name = names("MaxPooling2D")})(x);
  }
  // The 3x3 stride-1 "same" average pooling + 1x1 conv branch.
  KerasTensor pool_branch(const KerasTensor& x, int64_t filters) {
    auto y = L::AveragePooling2D({.pool_size = 3, .strides = L::PairArg(1), .padding = "same",
                                  .name = names("AveragePooling2D")})(x);
    return conv_bn(y, filters, 1, 1);
  }
  KerasTensor concat(const std::vector<KerasTensor>& xs, const std::string& name = "") {
    return L::Concatenate({.axis = 3, .name = name.empty() ? names("Concatenate") : name})(xs)[0];
  }
  // mixed0..2: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | pool-1x1.
  KerasTensor block35(const KerasTensor& x, int64_t pool_filters, const std::string& name) {
    auto b1 = conv_bn(x, 64, 1, 1);
    auto b5 = conv_bn(conv_bn(x, 48, 1, 1), 64, 5, 5);
    auto b3 = conv_bn(conv_bn(conv_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3);
    return concat({b1, b5, b3, pool_branch(x, pool_filters)}, name);
  }
  // mixed4..7: 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | pool-1x1, `mid` filters inside.
  KerasTensor block17(const KerasTensor& x, int64_t mid, const std::string& name) {
    auto b1 = conv_bn(x, 192, 1, 1);
    auto b7 = conv_bn(conv_bn(conv_bn(x, mid, 1, 1), mid, 1, 7), 192, 7, 1);
    auto d = conv_bn(conv_bn(x, mid, 1, 1), mid, 7, 1);
    d = conv_bn(conv_bn(conv_bn(d, mid, 1, 7), mid, 7, 1), 192, 1, 7);
    return concat({b1, b7, d, pool_branch(x, 192)}, name);
  }
  // mixed9, mixed10: 1x1 | 1x1-(1x3 | 3x1) | 1x1-3x3-(1x3 | 3x1) | pool-1x1.
  KerasTensor block8(const KerasTensor& x, int i) {
    auto b1 = conv_bn(x, 320, 1, 1);
    auto b3 = conv_bn(x, 384, 1, 1);
    auto b3_1 = conv_bn(b3, 384, 1, 3);
    auto b3_2 = conv_bn(b3, 384, 3, 1);
    b3 = concat({b3_1, b3_2}, "mixed9_" + std::to_string(i));
    auto d = conv_bn(conv_bn(x, 448, 1, 1), 384, 3, 3);
    auto d_1 = conv_bn(d, 384, 1, 3);
    auto d_2 = conv_bn(d, 384, 3, 1);
    d = concat({d_1, d_2});
    return concat({b1, b3, d, pool_branch(x, 192)}, "mixed" + std::to_string(9 + i));
  }

  detail::AutoNames names;  // Keras's automatic names, in creation order
};

}  // namespace

std::shared_ptr<Model> InceptionV3(const InceptionV3Options& o) {
  const auto a = detail::args_of("InceptionV3", o, "inception_v3");
  const auto [input, weights] = detail::start(a, 299, 75, "inception_v3", "inception_v3");
  Builder b;
  auto x = b.conv_bn(input, 32, 3, 3, 2, "valid");
  x = b.conv_bn(x, 32, 3, 3, 1, "valid");
  x = b.conv_bn(x, 64, 3, 3);
  x = b.max_pool(x);
  x = b.conv_bn(x, 80, 1, 1, 1, "valid");
  x = b.conv_bn(x, 192, 3, 3, 1, "valid");
  x = b.max_pool(x);
  x = b.block35(x, 32, "mixed0");
  x = b.block35(x, 64, "mixed1");
  x = b.block35(x, 64, "mixed2");
  {  // mixed3: 3x3 (stride 2) | 1x1-3x3-3x3 (stride 2) | max pool
    auto b3 = b.conv_bn(x, 384, 3, 3, 2, "valid");
    auto d = b.conv_bn(b.conv_bn(b.conv_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3, 2, "valid");
    x = b.concat({b3, d, b.max_pool(x)}, "mixed3");
  }
  x = b.block17(x, 128, "mixed4");
  x = b.block17(x, 160, "mixed5");
  x = b.block17(x, 160, "mixed6");
  x = b.block17(x, 192, "mixed7");
  {  // mixed8: 1x1-3x3 (stride 2) | 1x1-1x7-7x1-3x3 (stride 2) | max pool
    auto b3 = b.conv_bn(b.conv_bn(x, 192, 1, 1), 320, 3, 3, 2, "valid");
    auto b7 = b.conv_bn(b.conv_bn(b.conv_bn(x, 192, 1, 1), 192, 1, 7), 192, 7, 1);
    b7 = b.conv_bn(b7, 192, 3, 3, 2, "valid");
    x = b.concat({b3, b7, b.max_pool(x)}, "mixed8");
  }
  x = b.block8(x, 0);
  x = b.block8(x, 1);
  x = detail::classifier_or_pooling(a, x, b.names, true, false);
  return detail::finish(a, input, x, weights);
}

}  // namespace keras::applications
