// LayerNormalization (keras.layers.LayerNormalization) over the last axis: each sample's
// features are normalized with their own mean and biased variance, then scaled by gamma and
// shifted by beta. Weights: gamma (if scale), beta (if center), both (C,).
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

struct LayerNormalizationOptions {
  int64_t axis = -1;  // only the last axis is supported (NotImplementedError otherwise)
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  bool rms_scaling = false;  // not supported yet: NotImplementedError when true
  InitializerArg beta_initializer = "zeros";
  InitializerArg gamma_initializer = "ones";
  RegularizerArg beta_regularizer;
  RegularizerArg gamma_regularizer;
  ConstraintArg beta_constraint;  // applied after each optimizer update
  ConstraintArg gamma_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class LayerNormalizationImpl : public Layer {
 public:
  explicit LayerNormalizationImpl(LayerNormalizationOptions options);
  std::string class_name() const override { return "LayerNormalization"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  // "axis" is written as a list, as a built Keras 3 layer writes it.
  json get_config() const override;
  const LayerNormalizationOptions& options() const { return options_; }

 private:
  LayerNormalizationOptions options_;
  Variable gamma_, beta_;
};
KERAS_LAYER_HANDLE(LayerNormalization, LayerNormalizationOptions);

LayerNormalizationOptions layer_normalization_options_from_config(const json& config);

}  // namespace keras::layers
