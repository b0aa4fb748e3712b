#include "keras/applications/mobilenet_v3.h"

#include <functional>
#include <vector>

#include "keras/applications/builder.h"
#include "keras/applications/imagenet_utils.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/depthwise_conv2d.h"
#include "layers/dropout.h"
#include "layers/elementwise_merge.h"
#include "layers/flatten.h"
#include "layers/global_average_pooling2d.h"
#include "layers/input_layer.h"
#include "layers/relu.h"
#include "layers/rescaling.h"
#include "layers/zero_padding2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

using Activation = std::function<KerasTensor(const KerasTensor&)>;

KerasTensor bn(const KerasTensor& x, const std::string& name) {
  return L::BatchNormalization({.momentum = 0.999, .epsilon = 1e-3, .name = name})(x);
}
KerasTensor conv1x1(const KerasTensor& x, int64_t filters, bool use_bias, const std::string& name) {
  return L::Conv2D({.filters = filters, .kernel_size = 1, .padding = "same", .use_bias = use_bias, .name = name})(x);
}

// The model's two activations and the squeeze-and-excite gate, named as Keras names them when
// they are created: ReLU() -> re_lu_N, Activation("hard_swish") -> activation_N (written
// "hard_silu"), hard_sigmoid: ReLU(6)(x + 3) * (1/6) with operation nodes add_N, multiply_N.
struct Activations {
  detail::AutoNames& names;
  KerasTensor relu(const KerasTensor& x) const { return L::ReLU({.name = names("ReLU")})(x); }
  KerasTensor hard_swish(const KerasTensor& x) const {
    return L::Activation({.activation = "hard_silu", .name = names("Activation")})(x);
  }
  KerasTensor hard_sigmoid(const KerasTensor& x) const {
    auto relu6 = L::ReLU({.max_value = 6.0, .name = names("ReLU")});  // Python builds the layer first
    return detail::numpy_operation("Multiply", relu6(detail::numpy_operation("Add", x, 3.0, names)), 1.0 / 6.0, names);
  }
};

// Keras's _se_block: global average (keepdims), 1x1 squeeze (ReLU), 1x1 excite, hard_sigmoid
// gate multiplied onto the input.
KerasTensor se_block(const KerasTensor& in, int64_t filters, double se_ratio, const std::string& prefix,
                     const Activations& act) {
  auto x = L::GlobalAveragePooling2D({.keepdims = true, .name = prefix + "squeeze_excite_avg_pool"})(in);
  x = conv1x1(x, detail::make_divisible(static_cast<double>(filters) * se_ratio), true, prefix + "squeeze_excite_conv");
  x = L::ReLU({.name = prefix + "squeeze_excite_relu"})(x);
  x = act.hard_sigmoid(conv1x1(x, filters, true, prefix + "squeeze_excite_conv_1"));
  return L::Multiply({.name = prefix + "squeeze_excite_mul"})({in, x});
}

// One row of a Keras stack_fn: _inverted_res_block(x, expansion, depth(filters), kernel, stride,
// se_ratio, activation, id), where kernel, se_ratio and activation may be the model's own (those
// minimalistic changes) or fixed (3, None, relu).
struct Block {
  double expansion;
  int64_t filters;
  bool model_kernel;      // else 3
  int64_t stride;
  bool squeeze_excite;    // the model's se_ratio, else None
  bool model_activation;  // else relu
};

// Keras's stack_fns of MobileNetV3Small and MobileNetV3Large.
const std::vector<Block>& stack(const std::string& model_type) {
  static const std::vector<Block> small = {
      {1, 16, false, 2, true, false},        {72.0 / 16, 24, false, 2, false, false}, {88.0 / 24, 24, false, 1, false, false},
      {4, 40, true, 2, true, true},          {6, 40, true, 1, true, true},            {6, 40, true, 1, true, true},
      {3, 48, true, 1, true, true},          {3, 48, true, 1, true, true},            {6, 96, true, 2, true, true},
      {6, 96, true, 1, true, true},          {6, 96, true, 1, true, true}};
  static const std::vector<Block> large = {
      {1, 16, false, 1, false, false},  {4, 24, false, 2, false, false},  {3, 24, false, 1, false, false},
      {3, 40, true, 2, true, false},    {3, 40, true, 1, true, false},    {3, 40, true, 1, true, false},
      {6, 80, false, 2, false, true},   {2.5, 80, false, 1, false, true}, {2.3, 80, false, 1, false, true},
      {2.3, 80, false, 1, false, true}, {6, 112, false, 1, true, true},   {6, 112, false, 1, true, true},
      {6, 160, true, 2, true, true},    {6, 160, true, 1, true, true},    {6, 160, true, 1, true, true}};
  return model_type == "small" ? small : large;
}

// Keras's _inverted_res_block: [1x1 expand - BN - act] (not in block 0, "expanded_conv_"), [pad]
// depthwise (strided) - BN - act, [squeeze-and-excite], 1x1 project - BN, plus the input when the
// shapes allow.
KerasTensor inverted_res_block(const KerasTensor& in, double expansion, int64_t filters, int64_t kernel,
                               int64_t stride, double se_ratio, const Activation& activation, int id,
                               const Activations& act) {
  const int64_t in_filters = in.shape.back();
  const int64_t expanded = detail::make_divisible(static_cast<double>(in_filters) * expansion);
  std::string prefix = "expanded_conv_";
  KerasTensor x = in;
  if (id != 0) {
    prefix += std::to_string(id) + "_";
    x = activation(bn(conv1x1(x, expanded, false, prefix + "expand"), prefix + "expand_bn"));
  }
  if (stride == 2) {
    const auto [h, w] = imagenet_utils::correct_pad(x.shape, kernel);
    x = L::ZeroPadding2D({.padding = L::Padding2DArg({h.first, h.second}, {w.first, w.second}),
                          .name = prefix + "depthwise_pad"})(x);
  }
  x = L::DepthwiseConv2D({.kernel_size = kernel, .strides = stride, .padding = stride == 1 ? "same" : "valid",
                          .use_bias = false, .name = prefix + "depthwise"})(x);
  x = activation(bn(x, prefix + "depthwise_bn"));
  if (se_ratio > 0) x = se_block(x, expanded, se_ratio, prefix, act);
  x = bn(conv1x1(x, filters, false, prefix + "project"), prefix + "project_bn");
  if (stride == 1 && in_filters == filters) return L::Add({.name = prefix + "add"})({in, x});
  return x;
}

// Python's str(alpha) for the alphas Keras has weights for.
std::string alpha_text(double alpha) { return alpha == 0.75 ? "0.75" : "1.0"; }

}  // namespace

namespace detail {

std::shared_ptr<Model> MobileNetV3(const std::string& model_type, int64_t last_point_ch, const MobileNetV3Options& o) {
  const std::string where = model_type == "small" ? "MobileNetV3Small" : "MobileNetV3Large";
  auto a = args_of(where, o, where);
  check_args(a);
  // Keras's own checks here, not obtain_input_shape's: any channel count, (None, None, 3) by default.
  const Shape shape = imagenet_utils::obtain_input_shape(where, a.input_shape, 224, 32, false, false);
  if (a.weights == "imagenet" && (o.minimalistic ? o.alpha != 1.0 : o.alpha != 0.75 && o.alpha != 1.0))
    fail<ValueError>(where, "alpha 0.75 or 1.0 (minimalistic: 1.0) with weights \"imagenet\"", std::to_string(o.alpha),
                     "Keras publishes ImageNet weights for those only.");
  if (a.include_top) imagenet_utils::validate_activation(where, a.classifier_activation, a.weights);
  std::string weights = a.weights;
  if (a.weights == "imagenet") {
    const std::string model_name = model_type + (o.minimalistic ? "_minimalistic" : "") + "_224_" + alpha_text(o.alpha) +
                                   "_float";
    weights = weights_file(a, "weights_mobilenet_v3_" + model_name + (a.include_top ? "" : "_no_top_v2") + ".h5",
                           kKerasWeightsUrl + "mobilenet_v3/");
  }

  AutoNames names;
  const Activations act{names};
  const Activation relu = [&](const KerasTensor& x) { return act.relu(x); };
  const Activation activation =
      o.minimalistic ? relu : Activation([&](const KerasTensor& x) { return act.hard_swish(x); });
  const int64_t kernel = o.minimalistic ? 3 : 5;
  const double se_ratio = o.minimalistic ? 0.0 : 0.25;

  auto input = L::Input(shape, {.name = "input_layer"});
  KerasTensor x = input;
  if (o.include_preprocessing)
    x = L::Rescaling({.scale = 1.0 / 127.5, .offset = -1.0, .name = names("Rescaling")})(x);
  x = L::Conv2D({.filters = 16, .kernel_size = 3, .strides = 2, .padding = "same", .use_bias = false, .name = "conv"})(x);
  x = activation(bn(x, "conv_bn"));
  int id = 0;
  for (const Block& b : stack(model_type))
    x = inverted_res_block(x, b.expansion, make_divisible(static_cast<double>(b.filters) * o.alpha),
                           b.model_kernel ? kernel : 3, b.stride, b.squeeze_excite ? se_ratio : 0.0,
                           b.model_activation ? activation : relu, id++, act);
  const int64_t last_conv_ch = make_divisible(static_cast<double>(x.shape.back() * 6));
  if (o.alpha > 1.0) last_point_ch = make_divisible(static_cast<double>(last_point_ch) * o.alpha);
  x = activation(bn(conv1x1(x, last_conv_ch, false, "conv_1"), "conv_1_bn"));
  if (a.include_top) {
    x = L::GlobalAveragePooling2D({.keepdims = true, .name = names("GlobalAveragePooling2D")})(x);
    x = activation(conv1x1(x, last_point_ch, true, "conv_2"));
    if (o.dropout_rate > 0) x = L::Dropout({.rate = o.dropout_rate, .name = names("Dropout")})(x);
    x = conv1x1(x, a.classes, true, "logits");
    x = L::Flatten({.name = names("Flatten")})(x);
    x = L::Activation({.activation = activation_name(a.classifier_activation), .name = "predictions"})(x);
  } else {
    x = pooling(a, x, names, true);
  }
  return finish(a, input, x, weights);
}

}  // namespace detail

std::shared_ptr<Model> MobileNetV3Small(const MobileNetV3Options& o) { return detail::MobileNetV3("small", 1024, o); }
std::shared_ptr<Model> MobileNetV3Large(const MobileNetV3Options& o) { return detail::MobileNetV3("large", 1280, o); }

}  // namespace keras::applications
