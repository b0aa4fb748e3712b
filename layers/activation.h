// Activation (keras.layers.Activation): applies a named activation elementwise.
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct ActivationOptions {
  std::string activation = "linear";  // any name ops::activation knows; ValueError otherwise
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class ActivationImpl : public Layer {
 public:
  explicit ActivationImpl(ActivationOptions options);
  std::string class_name() const override { return "Activation"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const ActivationOptions& options() const { return options_; }

 private:
  ActivationOptions options_;
};
KERAS_LAYER_HANDLE(Activation, ActivationOptions);

// Reads a Keras 2 or Keras 3 Activation config (unknown keys ignored).
ActivationOptions activation_options_from_config(const json& config);

}  // namespace keras::layers
