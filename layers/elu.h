// ELU (keras.layers.ELU): x for x > 0, alpha * (exp(x) - 1) otherwise. Config: alpha.
#pragma once
#include <optional>

#include "layers/layer_handle.h"

namespace keras::layers {

struct ELUOptions {
  double alpha = 1.0;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class ELUImpl : public Layer {
 public:
  explicit ELUImpl(ELUOptions options);
  std::string class_name() const override { return "ELU"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const ELUOptions& options() const { return options_; }

 private:
  ELUOptions options_;
};
KERAS_LAYER_HANDLE(ELU, ELUOptions);

// Reads a Keras 2 or Keras 3 config (unknown keys ignored).
ELUOptions elu_options_from_config(const json& config);

}  // namespace keras::layers
