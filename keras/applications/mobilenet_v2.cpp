#include "keras/applications/mobilenet_v2.h"

#include <algorithm>
#include <vector>

#include "keras/applications/builder.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/depthwise_conv2d.h"
#include "layers/elementwise_merge.h"
#include "layers/relu.h"
#include "layers/zero_padding2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

KerasTensor bn(const KerasTensor& x, const std::string& name) {
  return L::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = name})(x);
}
KerasTensor relu6(const KerasTensor& x, const std::string& name) {
  return L::ReLU({.max_value = 6.0, .name = name})(x);
}
KerasTensor conv1x1(const KerasTensor& x, int64_t filters, const std::string& name) {
  return L::Conv2D({.filters = filters, .kernel_size = 1, .padding = "same", .use_bias = false, .name = name})(x);
}

// Keras's _inverted_res_block: [1x1 expand - BN - relu6] (not in block 0, "expanded_conv_"),
// [pad] 3x3 depthwise (strided) - BN - relu6, 1x1 project - BN, plus the input when the shapes
// allow.
KerasTensor inverted_res_block(const KerasTensor& in, int64_t expansion, int64_t stride, double alpha, int64_t filters,
                               int id) {
  const int64_t in_channels = in.shape.back();
  const int64_t pointwise_filters = detail::make_divisible(static_cast<double>(static_cast<int64_t>(filters * alpha)), 8);
  std::string prefix = "block_" + std::to_string(id) + "_";
  KerasTensor x = in;
  if (id != 0) {
    x = relu6(bn(conv1x1(x, expansion * in_channels, prefix + "expand"), prefix + "expand_BN"), prefix + "expand_relu");
  } else {
    prefix = "expanded_conv_";
  }
  if (stride == 2) {
    const auto [h, w] = imagenet_utils::correct_pad(x.shape, 3);
    x = L::ZeroPadding2D({.padding = L::Padding2DArg({h.first, h.second}, {w.first, w.second}), .name = prefix + "pad"})(x);
  }
  x = L::DepthwiseConv2D({.kernel_size = 3, .strides = stride, .padding = stride == 1 ? "same" : "valid",
                          .use_bias = false, .name = prefix + "depthwise"})(x);
  x = relu6(bn(x, prefix + "depthwise_BN"), prefix + "depthwise_relu");
  x = bn(conv1x1(x, pointwise_filters, prefix + "project"), prefix + "project_BN");
  if (in_channels == pointwise_filters && stride == 1) return L::Add({.name = prefix + "add"})({in, x});
  return x;
}

// The file name Keras gives alpha: Python's str(float(alpha)).
const char* alpha_text(double alpha) {
  for (const auto& [value, text] : {std::pair<double, const char*>{0.35, "0.35"}, {0.5, "0.5"}, {0.75, "0.75"},
                                    {1.0, "1.0"}, {1.3, "1.3"}, {1.4, "1.4"}})
    if (alpha == value) return text;
  return nullptr;
}

}  // namespace

std::shared_ptr<Model> MobileNetV2(const MobileNetV2Options& o) {
  auto a = detail::args_of("MobileNetV2", o, "");
  detail::check_args(a);
  const std::vector<int64_t> sizes = {96, 128, 160, 192, 224};  // Keras has weights for these
  auto input = detail::sized_input(a, sizes);
  int64_t rows = input.shape[1];
  std::string weights = a.weights;
  if (a.weights == "imagenet") {
    const char* text = alpha_text(o.alpha);
    if (!text)
      fail<ValueError>(a.where, "alpha 0.35, 0.5, 0.75, 1.0, 1.3 or 1.4 with weights \"imagenet\"",
                       std::to_string(o.alpha));
    rows = detail::weights_rows(input, sizes);
    const std::string file = std::string("mobilenet_v2_weights_tf_dim_ordering_tf_kernels_") + text + "_" +
                             std::to_string(rows) + (a.include_top ? "" : "_no_top") + ".h5";
    weights = detail::weights_file(a, file, detail::kKerasWeightsUrl + "mobilenet_v2/");
  }
  if (a.name.empty()) a.name = detail::sized_name("mobilenetv2", o.alpha, rows);

  auto x = L::Conv2D({.filters = detail::make_divisible(32 * o.alpha, 8), .kernel_size = 3, .strides = 2, .padding = "same",
                      .use_bias = false, .name = "Conv1"})(input);
  x = relu6(bn(x, "bn_Conv1"), "Conv1_relu");
  const struct { int64_t filters, stride, expansion; } blocks[] = {
      {16, 1, 1}, {24, 2, 6}, {24, 1, 6}, {32, 2, 6}, {32, 1, 6}, {32, 1, 6}, {64, 2, 6}, {64, 1, 6}, {64, 1, 6},
      {64, 1, 6}, {96, 1, 6}, {96, 1, 6}, {96, 1, 6}, {160, 2, 6}, {160, 1, 6}, {160, 1, 6}, {320, 1, 6}};
  int id = 0;
  for (const auto& b : blocks) x = inverted_res_block(x, b.expansion, b.stride, o.alpha, b.filters, id++);
  const int64_t last_filters = o.alpha > 1.0 ? detail::make_divisible(1280 * o.alpha, 8) : 1280;
  x = L::Conv2D({.filters = last_filters, .kernel_size = 1, .use_bias = false, .name = "Conv_1"})(x);
  x = relu6(bn(x, "Conv_1_bn"), "out_relu");
  detail::AutoNames names;
  x = detail::classifier_or_pooling(a, x, names, false, false);
  return detail::finish(a, input, x, weights);
}

}  // namespace keras::applications
