#include "keras/applications/efficientnet_builder.h"

#include <algorithm>

#include "keras/applications/imagenet_utils.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/dropout.h"
#include "layers/elementwise_merge.h"
#include "layers/global_average_pooling2d.h"
#include "layers/reshape.h"

namespace keras::applications::detail {
namespace L = keras::layers;

InitializerArg conv_kernel_initializer() {
  return std::make_shared<initializers::VarianceScaling>(2.0, "fan_out", "truncated_normal");
}
InitializerArg dense_kernel_initializer() {
  return std::make_shared<initializers::VarianceScaling>(1.0 / 3.0, "fan_out", "uniform");
}

KerasTensor squeeze_excite(const KerasTensor& x, int64_t filters_in, double se_ratio, const std::string& activation,
                           const std::string& name) {
  const int64_t filters = x.shape.back();
  const int64_t filters_se = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(filters_in) * se_ratio));
  auto se = L::GlobalAveragePooling2D({.name = name + "se_squeeze"})(x);
  se = L::Reshape({.target_shape = {1, 1, filters}, .name = name + "se_reshape"})(se);
  se = L::Conv2D({.filters = filters_se, .kernel_size = 1, .padding = "same", .activation = activation,
                  .kernel_initializer = conv_kernel_initializer(), .name = name + "se_reduce"})(se);
  se = L::Conv2D({.filters = filters, .kernel_size = 1, .padding = "same", .activation = "sigmoid",
                  .kernel_initializer = conv_kernel_initializer(), .name = name + "se_expand"})(se);
  return L::Multiply({.name = name + "se_excite"})({x, se});
}

KerasTensor drop_connect_add(const KerasTensor& x, const KerasTensor& inputs, double rate, const std::string& name) {
  KerasTensor y = x;
  if (rate > 0) y = L::Dropout({.rate = rate, .noise_shape = Shape{-1, 1, 1, 1}, .name = name + "drop"})(y);
  return L::Add({.name = name + "add"})({y, inputs});
}

KerasTensor efficientnet_top(const Args& a, const KerasTensor& x, int64_t filters, double bn_momentum,
                             const std::string& activation, double dropout_rate, const InitializerArg& bias_initializer) {
  auto y = L::Conv2D({.filters = filters, .kernel_size = 1, .padding = "same", .use_bias = false,
                      .kernel_initializer = conv_kernel_initializer(), .name = "top_conv"})(x);
  y = L::BatchNormalization({.axis = 3, .momentum = bn_momentum, .name = "top_bn"})(y);
  y = L::Activation({.activation = activation, .name = "top_activation"})(y);
  AutoNames unused;  // both families name their pooling layers
  if (!a.include_top) return pooling(a, y, unused, true);
  y = L::GlobalAveragePooling2D({.name = "avg_pool"})(y);
  if (dropout_rate > 0) y = L::Dropout({.rate = dropout_rate, .name = "top_dropout"})(y);
  imagenet_utils::validate_activation(a.where, a.classifier_activation, a.weights);
  return L::Dense({.units = a.classes, .activation = activation_name(a.classifier_activation),
                   .kernel_initializer = dense_kernel_initializer(), .bias_initializer = bias_initializer,
                   .name = "predictions"})(y);
}

std::string efficientnet_weights_file(const Args& a, const std::string& stem, const std::string& url_dir) {
  return weights_file(a, stem + (a.include_top ? ".h5" : "_notop.h5"), url_dir);
}

}  // namespace keras::applications::detail
