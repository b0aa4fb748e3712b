// CustomScaleLayer: the residual scaling of keras.applications.InceptionResNetV2, a layer Keras
// defines in keras/src/applications/inception_resnet_v2.py rather than in keras.layers.
// Inputs [x, residual] -> x + residual * scale (NumPy broadcasting). No weights. Config: scale.
//
// Names in files: Keras 3 writes {"module": "keras.src.applications.inception_resnet_v2",
// "class_name": "CustomScaleLayer", "registered_name": "CustomScaleLayer"}, and so does this
// framework (Keras 3 loads it by importing that module); tf_keras registered the class as
// "Custom>CustomScaleLayer", the name its configs and legacy .h5 files use. Both read back here,
// and a legacy .h5 written here names it "Custom>CustomScaleLayer", which tf_keras loads.
#pragma once
#include <optional>

#include "layers/merge.h"  // KERAS_MERGE_LAYER_HANDLE: called on a list, one output

namespace keras::layers {

struct CustomScaleLayerOptions {
  std::optional<double> scale;  // required, as in Keras (ValueError when unset)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class CustomScaleLayerImpl : public Layer {
 public:
  explicit CustomScaleLayerImpl(CustomScaleLayerOptions options);
  std::string class_name() const override { return "CustomScaleLayer"; }
  // inputs[0] + inputs[1] * scale; the scale takes the inputs' dtype (as a Python float in Keras).
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // Exactly two inputs of broadcastable shapes; ShapeError otherwise.
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const CustomScaleLayerOptions& options() const { return options_; }

 private:
  CustomScaleLayerOptions options_;
};
// CustomScaleLayer({.scale = 0.17})({x, residual}) -> one tensor (KerasTensor or Tensor).
KERAS_MERGE_LAYER_HANDLE(CustomScaleLayer, CustomScaleLayerOptions);

// Reads a Keras 3 or tf_keras CustomScaleLayer config (unknown keys ignored); ValueError without
// a numeric `scale`.
CustomScaleLayerOptions custom_scale_layer_options_from_config(const json& config);

}  // namespace keras::layers
