#include "keras/applications/convnext.h"

#include "keras/applications/builder.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/sequential.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/global_average_pooling2d.h"
#include "layers/input_layer.h"
#include "layers/layer_normalization.h"
#include "layers/layer_scale.h"
#include "layers/normalization.h"
#include "layers/stochastic_depth.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

// Keras's MODEL_CONFIGS: the variants it publishes ImageNet weights for.
struct Variant {
  const char* constructor;
  const char* weights_name;
  std::vector<int64_t> depths, projection_dims;
};
const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"ConvNeXtTiny", "convnext_tiny", {3, 3, 9, 3}, {96, 192, 384, 768}},
      {"ConvNeXtSmall", "convnext_small", {3, 3, 27, 3}, {96, 192, 384, 768}},
      {"ConvNeXtBase", "convnext_base", {3, 3, 27, 3}, {128, 256, 512, 1024}},
      {"ConvNeXtLarge", "convnext_large", {3, 3, 27, 3}, {192, 384, 768, 1536}},
      {"ConvNeXtXLarge", "convnext_xlarge", {3, 3, 27, 3}, {256, 512, 1024, 2048}}};
  return v;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

L::LayerNormalization layer_norm(const std::string& name) {
  return L::LayerNormalization({.epsilon = 1e-6, .name = name});
}

// Keras's ConvNeXt stem and downsampling blocks are Sequential models called on the running
// tensor; each builds its own InputLayer then, named from the model's input_layer counter.
KerasTensor sequential(const KerasTensor& x, const LayerPtr& first, const LayerPtr& second, const std::string& name,
                       detail::AutoNames& names) {
  const Shape features(x.shape.begin() + 1, x.shape.end());
  auto input = L::Input(features, {.name = names("InputLayer")});
  auto model = std::make_shared<Sequential>(std::vector<LayerPtr>{input.layer, first, second}, name);
  return (*model)(x);
}

// Keras's ConvNeXtBlock: 7x7 depthwise conv (Conv2D with groups), LayerNorm, Dense 4x, gelu,
// Dense back, [LayerScale], StochasticDepth (rate > 0) or a linear "identity" Activation, added
// to the block's input by an operation node.
KerasTensor convnext_block(const KerasTensor& in, int64_t dim, double drop_path_rate, std::optional<double> layer_scale,
                           const std::string& name, detail::AutoNames& names) {
  auto x = L::Conv2D({.filters = dim, .kernel_size = 7, .padding = "same", .groups = dim,
                      .name = name + "_depthwise_conv"})(in);
  x = layer_norm(name + "_layernorm")(x);
  x = L::Dense({.units = 4 * dim, .name = name + "_pointwise_conv_1"})(x);
  x = L::Activation({.activation = "gelu", .name = name + "_gelu"})(x);
  x = L::Dense({.units = dim, .name = name + "_pointwise_conv_2"})(x);
  if (layer_scale) x = L::LayerScale({.init_values = *layer_scale, .projection_dim = dim, .name = name + "_layer_scale"})(x);
  if (drop_path_rate != 0.0)
    x = L::StochasticDepth({.drop_path_rate = drop_path_rate, .name = name + "_stochastic_depth"})(x);
  else
    x = L::Activation({.activation = "linear", .name = name + "_identity"})(x);
  return detail::numpy_operation("Add", in, x, names);
}

// Keras's checks that need the model name: with "imagenet", the architecture of the variant
// `weights_name` and a name containing it; then the file (<name>[_notop].h5) to load.
std::string imagenet_file(const detail::Args& a, const detail::ConvNeXtArchitecture& arch) {
  if (a.weights != "imagenet") return a.weights;
  const Variant* variant = nullptr;
  for (const auto& v : variants())
    if (arch.weights_name == v.weights_name) variant = &v;
  if (!variant)
    fail<ValueError>(a.where, "weights_name one of convnext_tiny, _small, _base, _large, _xlarge with \"imagenet\"",
                     "\"" + arch.weights_name + "\"");
  if (arch.depths != variant->depths || arch.projection_dims != variant->projection_dims)
    fail<ValueError>(a.where, std::string("the architecture of ") + variant->weights_name + " with \"imagenet\": depths " +
                         list_text(variant->depths) + ", projection_dims " + list_text(variant->projection_dims),
                     "depths " + list_text(arch.depths) + ", projection_dims " + list_text(arch.projection_dims));
  if (a.name.find(arch.weights_name) == std::string::npos)
    fail<ValueError>(a.where, "a model name containing \"" + arch.weights_name + "\" with weights \"imagenet\"",
                     "\"" + a.name + "\"", "Keras names the weights file after the model.");
  return detail::weights_file(a, a.name + (a.include_top ? ".h5" : "_notop.h5"), detail::kKerasWeightsUrl + "convnext/");
}

}  // namespace

namespace detail {

std::shared_ptr<Model> ConvNeXt(const ConvNeXtArchitecture& arch, const ConvNeXtOptions& o) {
  auto a = args_of("ConvNeXt", o, "convnext");
  if (arch.depths.size() != 4 || arch.projection_dims.size() != 4)
    fail<ValueError>(a.where, "depths and projection_dims of 4 stages",
                     list_text(arch.depths) + " and " + list_text(arch.projection_dims));
  for (const auto& v : variants())
    if (arch.weights_name == v.weights_name) a.where = v.constructor;
  check_args(a);
  auto input = image_input(a, arch.default_size, 32);
  if (a.include_top) imagenet_utils::validate_activation(a.where, a.classifier_activation, a.weights);
  const std::string weights = imagenet_file(a, arch);
  const std::string& name = a.name;

  AutoNames names;
  names("InputLayer");  // input_layer
  KerasTensor x = input;
  if (o.include_preprocessing && input.shape.back() == 3) {
    const double sd[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
    x = L::Normalization({.mean = {0.485 * 255, 0.456 * 255, 0.406 * 255},
                          .variance = {sd[0] * sd[0], sd[1] * sd[1], sd[2] * sd[2]},
                          .name = name + "_prestem_normalization"})(x);
  }
  int64_t total = 0;
  for (int64_t d : arch.depths) total += d;
  int64_t block = 0;
  for (size_t i = 0; i < 4; ++i) {
    const int64_t dim = arch.projection_dims[i];
    if (i == 0) {
      x = sequential(x, L::Conv2D({.filters = dim, .kernel_size = 4, .strides = 4, .name = name + "_stem_conv"}),
                     layer_norm(name + "_stem_layernorm"), name + "_stem", names);
    } else {
      const std::string n = std::to_string(i - 1);
      x = sequential(x, layer_norm(name + "_downsampling_layernorm_" + n),
                     L::Conv2D({.filters = dim, .kernel_size = 2, .strides = 2, .name = name + "_downsampling_conv_" + n}),
                     name + "_downsampling_block_" + n, names);
    }
    for (int64_t j = 0; j < arch.depths[i]; ++j, ++block) {
      // np.linspace(0, drop_path_rate, total)[block]: start + block * step, the last one exact.
      const double rate = block == total - 1 ? (total == 1 ? 0.0 : arch.drop_path_rate)
                                             : static_cast<double>(block) * (arch.drop_path_rate / static_cast<double>(total - 1));
      x = convnext_block(x, dim, rate, arch.layer_scale_init_value,
                         name + "_stage_" + std::to_string(i) + "_block_" + std::to_string(j), names);
    }
  }
  if (a.include_top) {
    x = L::GlobalAveragePooling2D({.name = name + "_head_gap"})(x);
    x = layer_norm(name + "_head_layernorm")(x);
    x = L::Dense({.units = a.classes, .activation = activation_name(a.classifier_activation), .name = name + "_head_dense"})(x);
  } else {
    x = pooling(a, x, names, false);
    x = layer_norm(names("LayerNormalization"))(x);
  }
  return finish(a, input, x, weights);
}

}  // namespace detail

namespace {
std::shared_ptr<Model> build_variant(size_t index, const ConvNeXtOptions& o) {
  const Variant& v = variants()[index];
  ConvNeXtOptions named = o;
  if (named.name.empty()) named.name = v.weights_name;
  return detail::ConvNeXt({.depths = v.depths, .projection_dims = v.projection_dims, .weights_name = v.weights_name},
                          named);
}
}  // namespace

std::shared_ptr<Model> ConvNeXtTiny(const ConvNeXtOptions& o) { return build_variant(0, o); }
std::shared_ptr<Model> ConvNeXtSmall(const ConvNeXtOptions& o) { return build_variant(1, o); }
std::shared_ptr<Model> ConvNeXtBase(const ConvNeXtOptions& o) { return build_variant(2, o); }
std::shared_ptr<Model> ConvNeXtLarge(const ConvNeXtOptions& o) { return build_variant(3, o); }
std::shared_ptr<Model> ConvNeXtXLarge(const ConvNeXtOptions& o) { return build_variant(4, o); }

}  // namespace keras::applications
