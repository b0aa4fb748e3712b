// ReLU (keras.layers.ReLU): max(x, 0) with an optional ceiling (max_value), a slope below the threshold
// (negative_slope) and a threshold, as keras.activations.relu:
//   x if threshold < x (capped at max_value), else negative_slope * (x - threshold).
// Every option must be >= 0 (ValueError otherwise). Config: max_value, negative_slope, threshold.
#pragma once
#include <optional>

#include "layers/layer_handle.h"

namespace keras::layers {

struct ReLUOptions {
  std::optional<double> max_value;  // unset: no ceiling
  double negative_slope = 0.0;
  double threshold = 0.0;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class ReLUImpl : public Layer {
 public:
  explicit ReLUImpl(ReLUOptions options);
  std::string class_name() const override { return "ReLU"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const ReLUOptions& options() const { return options_; }

 private:
  ReLUOptions options_;
};
KERAS_LAYER_HANDLE(ReLU, ReLUOptions);

// Reads a Keras 2 or Keras 3 config (unknown keys ignored).
ReLUOptions relu_options_from_config(const json& config);

}  // namespace keras::layers
