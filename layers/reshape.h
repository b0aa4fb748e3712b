// Reshape (keras.layers.Reshape): (batch, ...) -> (batch, *target_shape); the batch axis is
// kept and one target extent may be -1 (inferred).
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct ReshapeOptions {
  Shape target_shape;  // without the batch axis; extents >= 1, at most one -1 (ValueError otherwise)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// ShapeError naming the layer when the input's per-sample element count does not fit the target.
class ReshapeImpl : public Layer {
 public:
  explicit ReshapeImpl(ReshapeOptions options);
  std::string class_name() const override { return "Reshape"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const ReshapeOptions& options() const { return options_; }

 private:
  // The target with -1 resolved for a per-sample element count (-1 when that is unknown).
  Shape resolved_target(int64_t per_sample) const;
  ReshapeOptions options_;
};
KERAS_LAYER_HANDLE(Reshape, ReshapeOptions);

// Reads a Keras 2 or Keras 3 Reshape config (unknown keys ignored).
ReshapeOptions reshape_options_from_config(const json& config);

}  // namespace keras::layers
