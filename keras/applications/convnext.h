// ConvNeXtTiny/Small/Base/Large/XLarge (keras.applications.convnext; Liu et al., CVPR 2022),
// built as Keras 3 builds them: layer names derived from the model name (convnext_tiny_prestem_
// normalization, convnext_tiny_stem, convnext_tiny_stage_0_block_0_depthwise_conv, ...,
// convnext_tiny_head_dense), the stem and the three downsampling blocks as nested Sequential
// models (convnext_tiny_stem, convnext_tiny_downsampling_block_0..2, whose weights are
// "convnext_tiny_stem/convnext_tiny_stem_conv/kernel"), each block's residual sum a Keras 3 operation
// node (add, add_1, ...), Keras's layer and weight order, so that the weights files Keras
// publishes (convnext_tiny.h5, convnext_tiny_notop.h5, ...) load by topology through `weights`
// (application_options.h), and to_json() equals what Keras writes for the same arguments.
//
// Preprocessing is part of the model (include_preprocessing: Normalization with the ImageNet
// mean and variance of pixels in [0, 255]); convnext::preprocess_input is Keras's placeholder that
// returns its input.
//
//   auto m = keras::applications::ConvNeXtTiny({.include_top = false, .input_shape = {64, 64, 3},
//                                               .pooling = "avg"});
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

// Keras's arguments in Keras's order (input_tensor aside); the shared ones mean what
// application_options.h says (default input 224x224, minimum 32x32).
struct ConvNeXtOptions {
  bool include_top = true;  // GlobalAveragePooling2D - LayerNormalization - Dense predictions
  // Normalization first (inputs are pixels in [0, 255]); left out when the input does not have 3
  // channels, as in Keras.
  bool include_preprocessing = true;
  std::string weights;
  Shape input_shape;
  // include_top = false: "" (4-D features), "avg" or "max" (2-D), followed in every case by a
  // LayerNormalization (epsilon 1e-6), as in Keras.
  std::string pooling;
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  // "" : "convnext_tiny", "convnext_small", ... The name prefixes every layer name; with
  // "imagenet" it must contain the variant's name (ValueError), and names Keras's file
  // (<name>.h5, <name>_notop.h5).
  std::string name;
};

// The errors of application_options.h, and with "imagenet" a name that does not contain the
// variant's ("convnext_tiny", ...; ValueError).
std::shared_ptr<Model> ConvNeXtTiny(const ConvNeXtOptions& options = {});
std::shared_ptr<Model> ConvNeXtSmall(const ConvNeXtOptions& options = {});
std::shared_ptr<Model> ConvNeXtBase(const ConvNeXtOptions& options = {});
std::shared_ptr<Model> ConvNeXtLarge(const ConvNeXtOptions& options = {});
std::shared_ptr<Model> ConvNeXtXLarge(const ConvNeXtOptions& options = {});

namespace convnext {
using imagenet_utils::decode_predictions;
using imagenet_utils::identity::preprocess_input;  // the models normalise their own inputs
}  // namespace convnext

namespace detail {
// The arguments of Keras's module-level builder convnext.ConvNeXt that its public constructors
// fix: drop_path_rate and layer_scale_init_value are reachable there only.
struct ConvNeXtArchitecture {
  std::vector<int64_t> depths;           // blocks per stage, 4 stages
  std::vector<int64_t> projection_dims;  // channels per stage, 4 stages
  // Stochastic depth: block k of n gets rate k * drop_path_rate / (n - 1) (NumPy's linspace); a
  // block with rate 0 has Activation("linear") "_identity" instead of StochasticDepth.
  double drop_path_rate = 0.0;
  std::optional<double> layer_scale_init_value = 1e-6;  // nullopt: no LayerScale
  int64_t default_size = 224;
  // The variant whose ImageNet weights "imagenet" loads ("convnext_tiny", ...); with "imagenet",
  // depths and projection_dims must be that variant's (ValueError).
  std::string weights_name;
};

// Keras's convnext.ConvNeXt(depths, projection_dims, drop_path_rate, layer_scale_init_value,
// default_size, name, ...): ValueError for depths or projection_dims without 4 entries, plus the
// errors above. Internal (the public constructors, and tests for Keras's weighted tiny fixtures).
std::shared_ptr<Model> ConvNeXt(const ConvNeXtArchitecture& architecture, const ConvNeXtOptions& options);
}  // namespace detail

}  // namespace keras::applications
