#include "keras/applications/nasnet.h"

#include <optional>

#include "keras/applications/builder.h"
#include "layers/activation.h"
#include "layers/average_pooling2d.h"
#include "layers/batch_normalization.h"
#include "layers/concatenate.h"
#include "layers/conv2d.h"
#include "layers/cropping2d.h"
#include "layers/elementwise_merge.h"
#include "layers/max_pooling2d.h"
#include "layers/separable_conv2d.h"
#include "layers/zero_padding2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

const std::string kWeightsUrl = detail::kKerasWeightsUrl + "nasnet/";

// A cell's output and the input it was given: the next cell's "previous path" p.
struct Cell {
  KerasTensor x, p;
};

// Keras's nasnet module: every named layer carries its block id, the relus, the paddings and
// croppings of the adjust block and a few merges are named automatically, in creation order.
class Builder {
 public:
  KerasTensor relu(const KerasTensor& x, const std::string& name = "") {
    return L::Activation({.activation = "relu", .name = name.empty() ? names("Activation") : name})(x);
  }
  static KerasTensor bn(const KerasTensor& x, const std::string& name) {
    return L::BatchNormalization({.momentum = 0.9997, .epsilon = 1e-3, .name = name})(x);
  }
  static KerasTensor conv1x1(const KerasTensor& x, int64_t filters, const std::string& name) {
    return L::Conv2D({.filters = filters, .kernel_size = L::PairArg(1, 1), .strides = L::PairArg(1, 1),
                      .padding = "same", .use_bias = false, .kernel_initializer = "he_normal", .name = name})(x);
  }
  static KerasTensor avg_pool(const KerasTensor& x, int64_t pool, int64_t stride, const std::string& padding,
                              const std::string& name) {
    return L::AveragePooling2D({.pool_size = L::PairArg(pool, pool), .strides = L::PairArg(stride, stride),
                                .padding = padding, .name = name})(x);
  }
  static KerasTensor max_pool(const KerasTensor& x, const std::string& name) {
    return L::MaxPooling2D({.pool_size = L::PairArg(3, 3), .strides = L::PairArg(2, 2), .name = name})(x);
  }
  KerasTensor add(const KerasTensor& a, const KerasTensor& b, const std::string& name = "") {
    return L::Add({.name = name.empty() ? names("Add") : name})({a, b});
  }
  static KerasTensor pad(const KerasTensor& x, int64_t kernel, const std::string& name) {
    const auto [h, w] = imagenet_utils::correct_pad(x.shape, kernel);
    return L::ZeroPadding2D({.padding = L::Padding2DArg({h.first, h.second}, {w.first, w.second}), .name = name})(x);
  }

  // Keras's _separable_conv_block: twice relu - SeparableConv2D - BN; a strided first conv is
  // valid after correct_pad, every other one "same".
  KerasTensor separable_block(const KerasTensor& in, int64_t filters, int64_t kernel, int64_t stride,
                              const std::string& id) {
    auto x = relu(in);
    if (stride == 2) x = pad(x, kernel, "separable_conv_1_pad_" + id);
    x = L::SeparableConv2D({.filters = filters, .kernel_size = L::PairArg(kernel, kernel),
                            .strides = L::PairArg(stride, stride), .padding = stride == 2 ? "valid" : "same",
                            .use_bias = false, .name = "separable_conv_1_" + id})(x);
    x = relu(bn(x, "separable_conv_1_bn_" + id));
    x = L::SeparableConv2D({.filters = filters, .kernel_size = L::PairArg(kernel, kernel), .padding = "same",
                            .use_bias = false, .name = "separable_conv_2_" + id})(x);
    return bn(x, "separable_conv_2_bn_" + id);
  }

  // Keras's _adjust_block: p brought to ip's width (two strided 1x1 paths, the second shifted by
  // a pixel) or to `filters` channels. Keras compares static shapes, so two unknown widths count
  // as equal.
  KerasTensor adjust(const std::optional<KerasTensor>& previous, const KerasTensor& ip, int64_t filters,
                     const std::string& id) {
    if (!previous) return ip;
    KerasTensor p = *previous;
    if (p.shape.at(2) != ip.shape.at(2)) {
      p = relu(p, "adjust_relu_1_" + id);
      auto p1 = conv1x1(avg_pool(p, 1, 2, "valid", "adjust_avg_pool_1_" + id), filters / 2, "adjust_conv_1_" + id);
      auto p2 = L::ZeroPadding2D({.padding = L::Padding2DArg({0, 1}, {0, 1}), .name = names("ZeroPadding2D")})(p);
      p2 = L::Cropping2D({.cropping = L::Padding2DArg({1, 0}, {1, 0}), .name = names("Cropping2D")})(p2);
      p2 = conv1x1(avg_pool(p2, 1, 2, "valid", "adjust_avg_pool_2_" + id), filters / 2, "adjust_conv_2_" + id);
      p = L::Concatenate({.axis = -1, .name = names("Concatenate")})({p1, p2});
      return bn(p, "adjust_bn_" + id);
    }
    if (p.shape.back() != filters)
      return bn(conv1x1(relu(p), filters, "adjust_conv_projection_" + id), "adjust_bn_" + id);
    return p;
  }

  // The relu - 1x1 conv - BN every cell applies to its input x.
  KerasTensor squeeze(const KerasTensor& ip, int64_t filters, const std::string& kind, const std::string& id) {
    return bn(conv1x1(relu(ip), filters, kind + "_conv_1_" + id), kind + "_bn_1_" + id);
  }

  // Keras's _normal_a_cell (Fig. 4 of the paper, left). One statement per layer call: the
  // automatic names follow creation order, which function arguments would not fix.
  Cell normal_cell(const KerasTensor& ip, const std::optional<KerasTensor>& previous, int64_t filters,
                   const std::string& id) {
    const auto p = adjust(previous, ip, filters, id);
    const auto h = squeeze(ip, filters, "normal", id);
    auto left = separable_block(h, filters, 5, 1, "normal_left1_" + id);
    auto right = separable_block(p, filters, 3, 1, "normal_right1_" + id);
    const auto x1 = add(left, right, "normal_add_1_" + id);
    left = separable_block(p, filters, 5, 1, "normal_left2_" + id);
    right = separable_block(p, filters, 3, 1, "normal_right2_" + id);
    const auto x2 = add(left, right, "normal_add_2_" + id);
    const auto x3 = add(avg_pool(h, 3, 1, "same", "normal_left3_" + id), p, "normal_add_3_" + id);
    left = avg_pool(p, 3, 1, "same", "normal_left4_" + id);
    right = avg_pool(p, 3, 1, "same", "normal_right4_" + id);
    const auto x4 = add(left, right, "normal_add_4_" + id);
    const auto x5 = add(separable_block(h, filters, 3, 1, "normal_left5_" + id), h, "normal_add_5_" + id);
    auto x = L::Concatenate({.axis = -1, .name = "normal_concat_" + id})({p, x1, x2, x3, x4, x5});
    return {x, ip};
  }

  // Keras's _reduction_a_cell (Fig. 4 of the paper, right), with Keras's names (reduction_add3,
  // reduction_add4, and reduction_left4 for both the pooling and the separable block of branch 5).
  Cell reduction_cell(const KerasTensor& ip, const std::optional<KerasTensor>& previous, int64_t filters,
                      const std::string& id) {
    const auto p = adjust(previous, ip, filters, id);
    const auto h = squeeze(ip, filters, "reduction", id);
    const auto h3 = pad(h, 3, "reduction_pad_1_" + id);
    auto left = separable_block(h, filters, 5, 2, "reduction_left1_" + id);
    auto right = separable_block(p, filters, 7, 2, "reduction_right1_" + id);
    const auto x1 = add(left, right, "reduction_add_1_" + id);
    left = max_pool(h3, "reduction_left2_" + id);
    right = separable_block(p, filters, 7, 2, "reduction_right2_" + id);
    const auto x2 = add(left, right, "reduction_add_2_" + id);
    left = avg_pool(h3, 3, 2, "valid", "reduction_left3_" + id);
    right = separable_block(p, filters, 5, 2, "reduction_right3_" + id);
    const auto x3 = add(left, right, "reduction_add3_" + id);
    const auto x4 = add(x2, avg_pool(x1, 3, 1, "same", "reduction_left4_" + id));
    left = separable_block(x1, filters, 3, 1, "reduction_left4_" + id);
    right = max_pool(h3, "reduction_right5_" + id);
    const auto x5 = add(left, right, "reduction_add4_" + id);
    auto x = L::Concatenate({.axis = -1, .name = "reduction_concat_" + id})({x2, x3, x4, x5});
    return {x, ip};
  }

  detail::AutoNames names;  // Keras's automatic names, in creation order
};

// The weights file Keras caches for "imagenet" (named apart from the file it downloads).
std::string nasnet_weights(const detail::Args& a, int64_t default_size) {
  if (a.weights != "imagenet") return a.weights;
  const std::string where = a.where + " weights \"imagenet\"";
  if (default_size != 224 && default_size != 331)
    fail<ValueError>(where, "NASNetMobile (default size 224) or NASNetLarge (331)",
                     "default size " + std::to_string(default_size), "ImageNet weights exist only for those two.");
  const std::string size = default_size == 224 ? "mobile" : "large";
  const std::string top = a.include_top ? "" : "_no_top";
  return detail::keras_cached_file(where, "nasnet_" + size + top + ".h5",
                                   kWeightsUrl + "NASNet-" + size + (a.include_top ? "" : "-no-top") + ".h5");
}

std::shared_ptr<Model> build_nasnet(const detail::Args& a, const detail::NASNetArchitecture& arch) {
  detail::check_args(a);
  const bool imagenet = a.weights == "imagenet";
  for (int64_t side : a.input_shape)
    if (imagenet && side < 0)
      fail<ValueError>(a.where, "a static input_shape (no unknown sizes) with ImageNet weights",
                       "input_shape " + shape_str(a.input_shape));
  const auto input = detail::image_input(a, arch.default_size, 32);
  const int64_t fm = arch.filter_multiplier;
  if (fm < 1 || arch.penultimate_filters % (24 * fm * fm) != 0)
    fail<ValueError>(a.where, "penultimate_filters a multiple of 24 * filter_multiplier^2 (" +
                                  std::to_string(24 * fm * fm) + ")",
                     std::to_string(arch.penultimate_filters));
  const std::string weights = nasnet_weights(a, arch.default_size);
  const int64_t filters = arch.penultimate_filters / 24;
  const int n = arch.num_blocks;
  Builder b;
  auto x = L::Conv2D({.filters = arch.stem_block_filters, .kernel_size = L::PairArg(3, 3), .strides = L::PairArg(2, 2),
                      .use_bias = false, .kernel_initializer = "he_normal", .name = "stem_conv1"})(input);
  Cell cell = b.reduction_cell(b.bn(x, "stem_bn1"), std::nullopt, filters / (fm * fm), "stem_1");
  cell = b.reduction_cell(cell.x, cell.p, filters / fm, "stem_2");
  int64_t stage_filters = filters;
  for (int stage = 0; stage < 3; ++stage, stage_filters *= fm) {
    if (stage > 0) {  // reduce_<n>, reduce_<2n>
      const Cell reduced = b.reduction_cell(cell.x, cell.p, stage_filters, "reduce_" + std::to_string(stage * n));
      cell = {reduced.x, arch.skip_reduction ? cell.p : reduced.p};
    }
    for (int i = 0; i < n; ++i)
      cell = b.normal_cell(cell.x, cell.p, stage_filters, std::to_string(stage * n + i + (stage > 0 ? 1 : 0)));
  }
  x = b.relu(cell.x);
  x = detail::classifier_or_pooling(a, x, b.names, false, false);
  return detail::finish(a, input, x, weights);
}

}  // namespace

namespace detail {
std::shared_ptr<Model> NASNet(const NASNetOptions& o, const NASNetArchitecture& architecture, const std::string& where) {
  return build_nasnet(args_of(where, o, "NASNet"), architecture);
}
}  // namespace detail

std::shared_ptr<Model> NASNetMobile(const NASNetOptions& o) {
  NASNetOptions options = o;
  if (!options.include_top && options.input_shape.empty()) options.input_shape = {224, 224, 3};
  return build_nasnet(detail::args_of("NASNetMobile", options, "nasnet_mobile"), {1056, 4, 32, false, 2, 224});
}

std::shared_ptr<Model> NASNetLarge(const NASNetOptions& o) {
  return build_nasnet(detail::args_of("NASNetLarge", o, "nasnet_large"), {4032, 6, 96, true, 2, 331});
}

}  // namespace keras::applications
