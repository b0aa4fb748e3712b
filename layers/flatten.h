// Flatten (keras.layers.Flatten): (batch, d1, ..., dn) -> (batch, d1 * ... * dn); the batch axis
// is kept, a rank-1 input becomes (batch, 1).
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct FlattenOptions {
  // "channels_first" moves the channel axis last before flattening (Keras's ordering).
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class FlattenImpl : public Layer {
 public:
  explicit FlattenImpl(FlattenOptions options = {});
  std::string class_name() const override { return "Flatten"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const FlattenOptions& options() const { return options_; }

 private:
  FlattenOptions options_;
};
KERAS_LAYER_HANDLE(Flatten, FlattenOptions);

// Reads a Keras 2 or Keras 3 Flatten config (unknown keys ignored).
FlattenOptions flatten_options_from_config(const json& config);

}  // namespace keras::layers
