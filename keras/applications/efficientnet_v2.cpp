#include "keras/applications/efficientnet_v2.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "keras/applications/efficientnet_builder.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/depthwise_conv2d.h"
#include "layers/normalization.h"
#include "layers/rescaling.h"

namespace keras::applications {
namespace detail {
namespace {
namespace L = keras::layers;

using Stages = std::vector<EfficientNetV2Stage>;
// efficientnet_v2.DEFAULT_BLOCKS_ARGS: kernel, repeats, in, out, expand, se, strides, fused.
const Stages kB0 = {{3, 1, 32, 16, 1, 0, 1, true},      {3, 2, 16, 32, 4, 0, 2, true},
                    {3, 2, 32, 48, 4, 0, 2, true},      {3, 3, 48, 96, 4, 0.25, 2, false},
                    {3, 5, 96, 112, 6, 0.25, 1, false}, {3, 8, 112, 192, 6, 0.25, 2, false}};
const Stages kS = {{3, 2, 24, 24, 1, 0, 1, true},        {3, 4, 24, 48, 4, 0, 2, true},
                   {3, 4, 48, 64, 4, 0, 2, true},        {3, 6, 64, 128, 4, 0.25, 2, false},
                   {3, 9, 128, 160, 6, 0.25, 1, false},  {3, 15, 160, 256, 6, 0.25, 2, false}};
const Stages kM = {{3, 3, 24, 24, 1, 0, 1, true},         {3, 5, 24, 48, 4, 0, 2, true},
                   {3, 5, 48, 80, 4, 0, 2, true},         {3, 7, 80, 160, 4, 0.25, 2, false},
                   {3, 14, 160, 176, 6, 0.25, 1, false},  {3, 18, 176, 304, 6, 0.25, 2, false},
                   {3, 5, 304, 512, 6, 0.25, 1, false}};
const Stages kL = {{3, 4, 32, 32, 1, 0, 1, true},         {3, 7, 32, 64, 4, 0, 2, true},
                   {3, 7, 64, 96, 4, 0, 2, true},         {3, 10, 96, 192, 4, 0.25, 2, false},
                   {3, 19, 192, 224, 6, 0.25, 1, false},  {3, 25, 224, 384, 6, 0.25, 2, false},
                   {3, 7, 384, 640, 6, 0.25, 1, false}};

KerasTensor bn(const KerasTensor& x, double momentum, const std::string& name) {
  return L::BatchNormalization({.axis = 3, .momentum = momentum, .name = name})(x);
}
KerasTensor act(const KerasTensor& x, const std::string& activation, const std::string& name) {
  return L::Activation({.activation = activation, .name = name})(x);
}
KerasTensor conv(const KerasTensor& x, int64_t filters, int64_t kernel_size, int64_t strides, const std::string& name) {
  return L::Conv2D({.filters = filters, .kernel_size = kernel_size, .strides = strides, .padding = "same",
                    .use_bias = false, .kernel_initializer = conv_kernel_initializer(), .name = name})(x);
}

// Keras's MBConvBlock (fused = false): [1x1 expand - BN - act], depthwise - BN - act, [SE],
// 1x1 project - BN. FusedMBConvBlock: [kxk (strided) expand - BN - act], [SE], project (1x1,
// or kxk strided - BN - act without expansion). Both end in the drop-connect residual when
// the shapes allow.
KerasTensor mbconv(const KerasTensor& inputs, const EfficientNetV2Stage& s, int64_t in, int64_t out, int64_t strides,
                   double survival_probability, const EfficientNetV2Params& p, const std::string& name) {
  const int64_t filters = in * s.expand_ratio;
  const bool expand = s.expand_ratio != 1;
  KerasTensor x = inputs;
  if (expand) {
    x = conv(x, filters, s.fused ? s.kernel_size : 1, s.fused ? strides : 1, name + "expand_conv");
    x = act(bn(x, p.bn_momentum, name + "expand_bn"), p.activation, name + "expand_activation");
  }
  if (!s.fused) {
    x = L::DepthwiseConv2D({.kernel_size = s.kernel_size, .strides = strides, .padding = "same", .use_bias = false,
                            .depthwise_initializer = conv_kernel_initializer(), .name = name + "dwconv2"})(x);
    x = act(bn(x, p.bn_momentum, name + "bn"), p.activation, name + "activation");
  }
  if (s.se_ratio > 0 && s.se_ratio <= 1) x = squeeze_excite(x, in, s.se_ratio, p.activation, name);
  const bool fused_alone = s.fused && !expand;  // the projection is the block's only convolution
  x = conv(x, out, fused_alone ? s.kernel_size : 1, fused_alone ? strides : 1, name + "project_conv");
  x = bn(x, p.bn_momentum, name + "project_bn");
  if (fused_alone) x = act(x, p.activation, name + "project_activation");
  if (strides == 1 && in == out) return drop_connect_add(x, inputs, survival_probability, name);
  return x;
}

}  // namespace

const std::vector<EfficientNetV2Stage>& efficientnet_v2_blocks(const std::string& key) {
  static const std::map<std::string, const Stages*> tables = {
      {"efficientnetv2-b0", &kB0}, {"efficientnetv2-b1", &kB0}, {"efficientnetv2-b2", &kB0},
      {"efficientnetv2-b3", &kB0}, {"efficientnetv2-s", &kS},   {"efficientnetv2-m", &kM},
      {"efficientnetv2-l", &kL}};
  const auto it = tables.find(key);
  if (it == tables.end())
    fail<ValueError>("EfficientNetV2", "blocks \"efficientnetv2-b0\"..\"-b3\", \"-s\", \"-m\" or \"-l\"", "\"" + key + "\"");
  return *it->second;
}

std::shared_ptr<Model> EfficientNetV2(const Args& a, const EfficientNetV2Params& p) {
  const Stages& stages = efficientnet_v2_blocks(p.blocks);
  check_args(a);
  const KerasTensor input = image_input(a, p.default_size, 32);
  const std::string weights = efficientnet_weights_file(
      a, p.weights_stem, kKerasWeightsUrl + "efficientnet_v2/");
  // Keras's round_filters here: width-scaled, to a multiple of depth_divisor, at least min_depth.
  auto round_filters = [&](int64_t filters) {
    const double scaled = static_cast<double>(filters) * p.width_coefficient;
    const auto d = p.depth_divisor;
    return std::max(p.min_depth > 0 ? p.min_depth : d, static_cast<int64_t>(scaled + static_cast<double>(d) / 2) / d * d);
  };

  AutoNames names;
  KerasTensor x = input;
  if (p.include_preprocessing) {
    // Keras picks the ImageNet normalisation by the model's name ("-b" variants).
    const bool b_variant = p.blocks.substr(p.blocks.rfind('-') + 1).starts_with("b");
    if (b_variant && input.shape.back() == 3) {
      x = L::Rescaling({.scale = 1.0 / 255, .name = names("Rescaling")})(x);
      x = L::Normalization({.axis = {3}, .mean = {0.485, 0.456, 0.406},
                            .variance = {0.229 * 0.229, 0.224 * 0.224, 0.225 * 0.225},
                            .name = names("Normalization")})(x);
    } else {
      x = L::Rescaling({.scale = 1.0 / 128.0, .offset = -1, .name = names("Rescaling")})(x);
    }
  }
  x = conv(x, round_filters(stages.front().input_filters), 3, 2, "stem_conv");
  x = act(bn(x, p.bn_momentum, "stem_bn"), p.activation, "stem_activation");

  double total = 0;  // Keras counts the unscaled repeats here
  for (const auto& s : stages) total += static_cast<double>(s.num_repeat);
  int b = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    const EfficientNetV2Stage& s = stages[i];
    const int64_t in = round_filters(s.input_filters), out = round_filters(s.output_filters);
    const auto repeats = static_cast<int64_t>(std::ceil(p.depth_coefficient * static_cast<double>(s.num_repeat)));
    for (int64_t j = 0; j < repeats; ++j, ++b) {
      const std::string name = "block" + std::to_string(i + 1) + static_cast<char>('a' + j) + "_";
      x = mbconv(x, s, j == 0 ? in : out, out, j == 0 ? s.strides : 1, p.drop_connect_rate * b / total, p, name);
    }
  }
  x = efficientnet_top(a, x, round_filters(1280), p.bn_momentum, p.activation, p.dropout_rate,
                       std::make_shared<initializers::Constant>(0.0));
  return finish(a, input, x, weights);
}

}  // namespace detail

namespace {

std::shared_ptr<Model> build(const char* where, const EfficientNetV2Options& o, const std::string& default_name,
                             double width, double depth, int64_t size) {
  return detail::EfficientNetV2(detail::args_of(where, o, default_name),
                                {.width_coefficient = width, .depth_coefficient = depth, .default_size = size,
                                 .blocks = default_name, .include_preprocessing = o.include_preprocessing,
                                 .weights_stem = default_name});
}

}  // namespace

std::shared_ptr<Model> EfficientNetV2B0(const EfficientNetV2Options& o) {
  return build("EfficientNetV2B0", o, "efficientnetv2-b0", 1.0, 1.0, 224);
}
std::shared_ptr<Model> EfficientNetV2B1(const EfficientNetV2Options& o) {
  return build("EfficientNetV2B1", o, "efficientnetv2-b1", 1.0, 1.1, 240);
}
std::shared_ptr<Model> EfficientNetV2B2(const EfficientNetV2Options& o) {
  return build("EfficientNetV2B2", o, "efficientnetv2-b2", 1.1, 1.2, 260);
}
std::shared_ptr<Model> EfficientNetV2B3(const EfficientNetV2Options& o) {
  return build("EfficientNetV2B3", o, "efficientnetv2-b3", 1.2, 1.4, 300);
}
std::shared_ptr<Model> EfficientNetV2S(const EfficientNetV2Options& o) {
  return build("EfficientNetV2S", o, "efficientnetv2-s", 1.0, 1.0, 384);
}
std::shared_ptr<Model> EfficientNetV2M(const EfficientNetV2Options& o) {
  return build("EfficientNetV2M", o, "efficientnetv2-m", 1.0, 1.0, 480);
}
std::shared_ptr<Model> EfficientNetV2L(const EfficientNetV2Options& o) {
  return build("EfficientNetV2L", o, "efficientnetv2-l", 1.0, 1.0, 480);
}

}  // namespace keras::applications
