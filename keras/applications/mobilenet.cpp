#include "keras/applications/mobilenet.h"

#include <vector>

#include "keras/applications/builder.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/depthwise_conv2d.h"
#include "layers/dropout.h"
#include "layers/global_average_pooling2d.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "layers/zero_padding2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

KerasTensor bn_relu6(const KerasTensor& x, const std::string& name) {
  auto y = L::BatchNormalization({.name = name + "_bn"})(x);
  return L::ReLU({.max_value = 6.0, .name = name + "_relu"})(y);
}

// Keras's _depthwise_conv_block: [pad] 3x3 depthwise (strided) - BN - relu6 - 1x1 pointwise - BN - relu6.
KerasTensor depthwise_block(const KerasTensor& x, int64_t pointwise_filters, const MobileNetOptions& o, int64_t stride,
                            int id) {
  const std::string n = std::to_string(id);
  KerasTensor y = x;
  if (stride != 1) y = L::ZeroPadding2D({.padding = L::Padding2DArg({0, 1}, {0, 1}), .name = "conv_pad_" + n})(y);
  y = L::DepthwiseConv2D({.kernel_size = 3, .strides = stride, .padding = stride == 1 ? "same" : "valid",
                          .depth_multiplier = o.depth_multiplier, .use_bias = false, .name = "conv_dw_" + n})(y);
  y = bn_relu6(y, "conv_dw_" + n);
  y = L::Conv2D({.filters = static_cast<int64_t>(static_cast<double>(pointwise_filters) * o.alpha), .kernel_size = 1,
                 .padding = "same", .use_bias = false, .name = "conv_pw_" + n})(y);
  return bn_relu6(y, "conv_pw_" + n);
}

}  // namespace

std::shared_ptr<Model> MobileNet(const MobileNetOptions& o) {
  auto a = detail::args_of("MobileNet", o, "");
  detail::check_args(a);
  const std::vector<int64_t> sizes = {128, 160, 192, 224};  // Keras has weights for these
  auto input = detail::sized_input(a, sizes);
  int64_t rows = input.shape[1];
  std::string weights = a.weights;
  if (a.weights == "imagenet") {
    if (o.depth_multiplier != 1)
      fail<ValueError>(a.where, "depth_multiplier 1 with weights \"imagenet\"", std::to_string(o.depth_multiplier));
    const char* alpha_text = o.alpha == 1.0 ? "1_0" : o.alpha == 0.75 ? "7_5" : o.alpha == 0.5 ? "5_0" : o.alpha == 0.25 ? "2_5" : nullptr;
    if (!alpha_text)
      fail<ValueError>(a.where, "alpha 0.25, 0.5, 0.75 or 1.0 with weights \"imagenet\"", std::to_string(o.alpha));
    rows = detail::weights_rows(input, sizes);
    const std::string file = std::string("mobilenet_") + alpha_text + "_" + std::to_string(rows) + "_tf" +
                             (a.include_top ? "" : "_no_top") + ".h5";
    weights = detail::weights_file(a, file, detail::kKerasWeightsUrl + "mobilenet/");
  }
  if (a.name.empty()) a.name = detail::sized_name("mobilenet", o.alpha, rows);

  auto x = L::Conv2D({.filters = static_cast<int64_t>(32 * o.alpha), .kernel_size = 3, .strides = 2, .padding = "same",
                      .use_bias = false, .name = "conv1"})(input);
  x = bn_relu6(x, "conv1");
  const struct { int64_t filters, stride; } blocks[] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},
                                                       {512, 2}, {512, 1}, {512, 1}, {512, 1}, {512, 1},
                                                       {512, 1}, {1024, 2}, {1024, 1}};
  int id = 1;
  for (const auto& blk : blocks) x = depthwise_block(x, blk.filters, o, blk.stride, id++);
  detail::AutoNames names;
  if (a.include_top) {
    x = L::GlobalAveragePooling2D({.keepdims = true, .name = names("GlobalAveragePooling2D")})(x);
    x = L::Dropout({.rate = o.dropout, .name = "dropout"})(x);
    x = L::Conv2D({.filters = a.classes, .kernel_size = 1, .padding = "same", .name = "conv_preds"})(x);
    x = L::Reshape({.target_shape = {a.classes}, .name = "reshape_2"})(x);
    imagenet_utils::validate_activation(a.where, a.classifier_activation, a.weights);
    x = L::Activation({.activation = detail::activation_name(a.classifier_activation), .name = "predictions"})(x);
  } else {
    x = detail::pooling(a, x, names, false);
  }
  return detail::finish(a, input, x, weights);
}

}  // namespace keras::applications
