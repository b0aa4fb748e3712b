// Keras's module-level builders of the EfficientNet families, efficientnet.EfficientNet(...) and
// efficientnet_v2.EfficientNetV2(...), which every public constructor calls with its own
// coefficients (and which make_applications.py calls with small ones for the tiny fixtures), and
// the pieces the two families share: the squeeze-and-excite gate, the drop-connect residual and
// the top. Internal to keras/applications/ (namespace detail); the public contract is
// efficientnet.h and efficientnet_v2.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "keras/applications/builder.h"
#include "layers/initializers.h"

namespace keras::applications::detail {

// efficientnet.EfficientNet's arguments beside the shared ones (Keras's names and defaults).
struct EfficientNetParams {
  double width_coefficient = 1.0;
  double depth_coefficient = 1.0;
  int64_t default_size = 224;
  double dropout_rate = 0.2;       // top_dropout, when > 0
  double drop_connect_rate = 0.2;  // block k of n drops whole samples at rate * k / n
  int64_t depth_divisor = 8;
  std::string activation = "silu";  // Keras's "swish", which Keras 3 writes as "silu"
  // The stem of the ImageNet file, Keras's model name ("efficientnetb0"): <stem>[_notop].h5.
  std::string weights_stem;
};

// Keras's EfficientNet(...) with the default blocks (B0's seven stages), a.name the model's
// name: Rescaling(1/255), Normalization(axis 3) whose mean/variance are weights (the ImageNet
// file's statistics), with "imagenet" a Rescaling by 1/sqrt(ImageNet std) as Keras adds, then
// stem, blocks, top. Errors as application_options.h says.
std::shared_ptr<Model> EfficientNet(const Args& a, const EfficientNetParams& p);

// One stage of efficientnet_v2.DEFAULT_BLOCKS_ARGS (before width/depth scaling).
struct EfficientNetV2Stage {
  int64_t kernel_size, num_repeat, input_filters, output_filters, expand_ratio;
  double se_ratio;
  int64_t strides;
  bool fused;  // conv_type 1: FusedMBConvBlock, else MBConvBlock
};

// efficientnet_v2.EfficientNetV2's arguments beside the shared ones.
struct EfficientNetV2Params {
  double width_coefficient = 1.0;
  double depth_coefficient = 1.0;
  int64_t default_size = 224;
  double dropout_rate = 0.2;
  double drop_connect_rate = 0.2;
  int64_t depth_divisor = 8;
  int64_t min_depth = 8;
  double bn_momentum = 0.9;
  std::string activation = "silu";
  // The key of DEFAULT_BLOCKS_ARGS ("efficientnetv2-b0", "-s", "-m", "-l"; b1..b3 are b0's
  // table): the stages, and, as Keras decides by that name, which preprocessing the model has.
  std::string blocks;
  bool include_preprocessing = true;
  // The ImageNet file's stem, Keras's model name ("efficientnetv2-b0"): <stem>[_notop].h5.
  std::string weights_stem;
};

// DEFAULT_BLOCKS_ARGS[key]; ValueError for another key.
const std::vector<EfficientNetV2Stage>& efficientnet_v2_blocks(const std::string& key);

// Keras's EfficientNetV2(...), a.name the model's name. Preprocessing (include_preprocessing):
// for the "-b" tables with 3 channels Rescaling(1/255) and Normalization with ImageNet's
// mean/variance in the config, else Rescaling(1/128, offset -1). Errors as
// application_options.h says.
std::shared_ptr<Model> EfficientNetV2(const Args& a, const EfficientNetV2Params& p);

// ---- shared by the two families ----

// CONV_KERNEL_INITIALIZER and DENSE_KERNEL_INITIALIZER of both Keras modules.
InitializerArg conv_kernel_initializer();   // VarianceScaling(2, fan_out, truncated_normal)
InitializerArg dense_kernel_initializer();  // VarianceScaling(1/3, fan_out, uniform)

// The squeeze-and-excite gate of both families' blocks: <name>se_squeeze (GAP), se_reshape
// (1, 1, C), se_reduce (max(1, int(filters_in * se_ratio)) filters, `activation`), se_expand
// (C, sigmoid), se_excite = x * gate.
KerasTensor squeeze_excite(const KerasTensor& x, int64_t filters_in, double se_ratio, const std::string& activation,
                           const std::string& name);

// The end of a block with a residual: <name>drop (Dropout(rate, noise_shape (-1, 1, 1, 1))
// when rate > 0) then <name>add of x and the block's input.
KerasTensor drop_connect_add(const KerasTensor& x, const KerasTensor& inputs, double rate, const std::string& name);

// top_conv (1x1, `filters`), top_bn, top_activation, then with include_top avg_pool,
// top_dropout (when dropout_rate > 0) and predictions (dense_kernel_initializer,
// `bias_initializer`), else the pooling head (avg_pool / max_pool).
KerasTensor efficientnet_top(const Args& a, const KerasTensor& x, int64_t filters, double bn_momentum,
                             const std::string& activation, double dropout_rate, const InitializerArg& bias_initializer);

// The file weights names: with "imagenet", <url_dir><stem>.h5 (<stem>_notop.h5 without the
// top) from Keras's cache (weights_file).
std::string efficientnet_weights_file(const Args& a, const std::string& stem, const std::string& url_dir);

}  // namespace keras::applications::detail
