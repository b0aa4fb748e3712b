// LayerScale (keras.src.applications.convnext.LayerScale): multiplies the last axis by a trained
// per-channel scale, the residual-branch scaling of ConvNeXt (arXiv:2103.17239).
//
//   auto y = keras::layers::LayerScale({.init_values = 1e-6, .projection_dim = 96})(x);  // x (..., 96)
//
// Config (Keras 3 and tf_keras): init_values, projection_dim. One trainable weight of shape
// (projection_dim,), initialised to init_values. Keras 3 leaves it unnamed, so its path is
// "<layer>/variable" (legacy .h5 weight name "<layer>/variable"); tf_keras names it "gamma"
// ("<layer>/gamma:0"). The layer is written as Keras 3 writes it: module
// "keras.src.applications.convnext", registered_name "LayerScale".
// The input's last axis must be projection_dim (ShapeError otherwise; Keras would broadcast an
// axis of 1, which no model does).
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct LayerScaleOptions {
  double init_values = 1e-6;   // ConvNeXt's layer_scale_init_value
  int64_t projection_dim = 0;  // required: > 0 (ValueError otherwise)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class LayerScaleImpl : public Layer {
 public:
  explicit LayerScaleImpl(LayerScaleOptions options);
  std::string class_name() const override { return "LayerScale"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const LayerScaleOptions& options() const { return options_; }
  const Variable& gamma() const { return gamma_; }

 private:
  LayerScaleOptions options_;
  Variable gamma_;
};
KERAS_LAYER_HANDLE(LayerScale, LayerScaleOptions);

// Reads a Keras 3 or tf_keras config (unknown keys ignored); ValueError naming the key when
// init_values or projection_dim is missing or not a number.
LayerScaleOptions layer_scale_options_from_config(const json& config);

}  // namespace keras::layers
