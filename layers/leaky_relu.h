// LeakyReLU (keras.layers.LeakyReLU): x for x >= 0, negative_slope * x otherwise. Keras 3
// default slope 0.3 (Keras 2 wrote it as 'alpha', read too). Config: negative_slope.
#pragma once
#include <optional>

#include "layers/layer_handle.h"

namespace keras::layers {

struct LeakyReLUOptions {
  double negative_slope = 0.3;  // >= 0 (ValueError otherwise)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class LeakyReLUImpl : public Layer {
 public:
  explicit LeakyReLUImpl(LeakyReLUOptions options);
  std::string class_name() const override { return "LeakyReLU"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const LeakyReLUOptions& options() const { return options_; }

 private:
  LeakyReLUOptions options_;
};
KERAS_LAYER_HANDLE(LeakyReLU, LeakyReLUOptions);

// Reads a Keras 2 or Keras 3 config (unknown keys ignored).
LeakyReLUOptions leaky_relu_options_from_config(const json& config);

}  // namespace keras::layers
