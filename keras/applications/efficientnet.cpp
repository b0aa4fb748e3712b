#include "keras/applications/efficientnet.h"

#include <algorithm>
#include <cmath>

#include "keras/applications/efficientnet_builder.h"
#include "keras/applications/imagenet_utils.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/depthwise_conv2d.h"
#include "layers/normalization.h"
#include "layers/rescaling.h"
#include "layers/zero_padding2d.h"

namespace keras::applications {
namespace detail {
namespace {
namespace L = keras::layers;

// efficientnet.DEFAULT_BLOCKS_ARGS: every stage has id_skip and se_ratio 0.25.
struct Stage {
  int64_t kernel_size, repeats, filters_in, filters_out, expand_ratio, strides;
};
constexpr Stage kStages[] = {{3, 1, 32, 16, 1, 1},  {3, 2, 16, 24, 6, 2},   {5, 2, 24, 40, 6, 2},
                             {3, 3, 40, 80, 6, 2},  {5, 3, 80, 112, 6, 1},  {5, 4, 112, 192, 6, 2},
                             {3, 1, 192, 320, 6, 1}};
constexpr double kSeRatio = 0.25;
constexpr double kImagenetStd[] = {0.229, 0.224, 0.225};  // IMAGENET_STDDEV_RGB

KerasTensor bn_act(const KerasTensor& x, const std::string& activation, const std::string& bn_name,
                   const std::string& act_name) {
  auto y = L::BatchNormalization({.axis = 3, .name = bn_name})(x);
  return L::Activation({.activation = activation, .name = act_name})(y);
}
KerasTensor conv1x1(const KerasTensor& x, int64_t filters, const std::string& name) {
  return L::Conv2D({.filters = filters, .kernel_size = 1, .padding = "same", .use_bias = false,
                    .kernel_initializer = conv_kernel_initializer(), .name = name})(x);
}
KerasTensor zero_pad(const KerasTensor& x, int64_t kernel_size, const std::string& name) {
  const auto [h, w] = imagenet_utils::correct_pad(x.shape, kernel_size);
  return L::ZeroPadding2D({.padding = L::Padding2DArg({h.first, h.second}, {w.first, w.second}), .name = name})(x);
}

// Keras's efficientnet.block: [1x1 expand - BN - act], [pad] depthwise (strided: valid after
// correct_pad, else same) - BN - act, squeeze-and-excite, 1x1 project - BN, and the residual
// (with drop connect) when the shapes allow.
KerasTensor block(const KerasTensor& inputs, const std::string& activation, double drop_rate, const std::string& name,
                  int64_t filters_in, int64_t filters_out, int64_t kernel_size, int64_t strides, int64_t expand_ratio) {
  KerasTensor x = inputs;
  if (expand_ratio != 1) {
    x = conv1x1(x, filters_in * expand_ratio, name + "expand_conv");
    x = bn_act(x, activation, name + "expand_bn", name + "expand_activation");
  }
  if (strides == 2) x = zero_pad(x, kernel_size, name + "dwconv_pad");
  x = L::DepthwiseConv2D({.kernel_size = kernel_size, .strides = strides, .padding = strides == 2 ? "valid" : "same",
                          .use_bias = false, .depthwise_initializer = conv_kernel_initializer(),
                          .name = name + "dwconv"})(x);
  x = bn_act(x, activation, name + "bn", name + "activation");
  x = squeeze_excite(x, filters_in, kSeRatio, activation, name);
  x = L::BatchNormalization({.axis = 3, .name = name + "project_bn"})(conv1x1(x, filters_out, name + "project_conv"));
  if (strides == 1 && filters_in == filters_out) return drop_connect_add(x, inputs, drop_rate, name);
  return x;
}

}  // namespace

std::shared_ptr<Model> EfficientNet(const Args& a, const EfficientNetParams& p) {
  check_args(a);
  const KerasTensor input = image_input(a, p.default_size, 32);
  const std::string weights = efficientnet_weights_file(a, p.weights_stem, "https://storage.googleapis.com/keras-applications/");
  // Keras's round_filters: width-scaled, to a multiple of depth_divisor, never 10% below.
  auto round_filters = [&](int64_t filters) {
    const double scaled = static_cast<double>(filters) * p.width_coefficient;
    const auto d = p.depth_divisor;
    int64_t n = std::max(d, static_cast<int64_t>(scaled + static_cast<double>(d) / 2) / d * d);
    if (static_cast<double>(n) < 0.9 * scaled) n += d;
    return n;
  };
  auto round_repeats = [&](int64_t repeats) {
    return static_cast<int64_t>(std::ceil(p.depth_coefficient * static_cast<double>(repeats)));
  };

  AutoNames names;
  auto x = L::Rescaling({.scale = 1.0 / 255.0, .name = names("Rescaling")})(input);
  x = L::Normalization({.axis = {3}, .name = names("Normalization")})(x);
  if (a.weights == "imagenet") {
    // Keras's ImageNet files hold the std as the Normalization's variance, so Keras divides by
    // sqrt(std) once more to reach (x - mean) / std.
    std::vector<double> scales;
    for (double s : kImagenetStd) scales.push_back(1.0 / std::sqrt(s));
    x = L::Rescaling({.channel_scales = scales, .name = names("Rescaling")})(x);
  }
  x = zero_pad(x, 3, "stem_conv_pad");
  x = L::Conv2D({.filters = round_filters(32), .kernel_size = 3, .strides = 2, .padding = "valid", .use_bias = false,
                 .kernel_initializer = conv_kernel_initializer(), .name = "stem_conv"})(x);
  x = bn_act(x, p.activation, "stem_bn", "stem_activation");

  double total = 0;
  for (const Stage& s : kStages) total += static_cast<double>(round_repeats(s.repeats));
  int b = 0;
  int stage_number = 1;
  for (const Stage& s : kStages) {
    const int64_t filters_in = round_filters(s.filters_in), filters_out = round_filters(s.filters_out);
    const int64_t repeats = round_repeats(s.repeats);
    for (int64_t j = 0; j < repeats; ++j, ++b) {
      const std::string name = "block" + std::to_string(stage_number) + static_cast<char>('a' + j) + "_";
      x = block(x, p.activation, p.drop_connect_rate * b / total, name, j == 0 ? filters_in : filters_out, filters_out,
                s.kernel_size, j == 0 ? s.strides : 1, s.expand_ratio);
    }
    ++stage_number;
  }
  x = efficientnet_top(a, x, round_filters(1280), 0.99, p.activation, p.dropout_rate, "zeros");
  return finish(a, input, x, weights);
}

}  // namespace detail

namespace {

std::shared_ptr<Model> build(const char* where, const EfficientNetOptions& o, const std::string& default_name,
                             double width, double depth, int64_t size, double dropout) {
  return detail::EfficientNet(detail::args_of(where, o, default_name),
                              {.width_coefficient = width, .depth_coefficient = depth, .default_size = size,
                               .dropout_rate = dropout, .weights_stem = default_name});
}

}  // namespace

std::shared_ptr<Model> EfficientNetB0(const EfficientNetOptions& o) {
  return build("EfficientNetB0", o, "efficientnetb0", 1.0, 1.0, 224, 0.2);
}
std::shared_ptr<Model> EfficientNetB1(const EfficientNetOptions& o) {
  return build("EfficientNetB1", o, "efficientnetb1", 1.0, 1.1, 240, 0.2);
}
std::shared_ptr<Model> EfficientNetB2(const EfficientNetOptions& o) {
  return build("EfficientNetB2", o, "efficientnetb2", 1.1, 1.2, 260, 0.3);
}
std::shared_ptr<Model> EfficientNetB3(const EfficientNetOptions& o) {
  return build("EfficientNetB3", o, "efficientnetb3", 1.2, 1.4, 300, 0.3);
}
std::shared_ptr<Model> EfficientNetB4(const EfficientNetOptions& o) {
  return build("EfficientNetB4", o, "efficientnetb4", 1.4, 1.8, 380, 0.4);
}
std::shared_ptr<Model> EfficientNetB5(const EfficientNetOptions& o) {
  return build("EfficientNetB5", o, "efficientnetb5", 1.6, 2.2, 456, 0.4);
}
std::shared_ptr<Model> EfficientNetB6(const EfficientNetOptions& o) {
  return build("EfficientNetB6", o, "efficientnetb6", 1.8, 2.6, 528, 0.5);
}
std::shared_ptr<Model> EfficientNetB7(const EfficientNetOptions& o) {
  return build("EfficientNetB7", o, "efficientnetb7", 2.0, 3.1, 600, 0.5);
}

}  // namespace keras::applications
