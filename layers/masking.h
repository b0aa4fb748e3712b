// Masking (keras.layers.Masking): marks the timesteps whose features all equal mask_value as
// padding. Input (batch, steps, ...features): a step is kept when any of its last-axis entries
// differs from mask_value; output = x with the masked steps zeroed, carrying the mask
// (batch, steps, ...) of the kept steps for the layers after it.
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct MaskingOptions {
  double mask_value = 0.0;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class MaskingImpl : public Layer {
 public:
  explicit MaskingImpl(MaskingOptions options);
  std::string class_name() const override { return "Masking"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  // ShapeError unless one input of rank >= 2 (the last axis holds the features).
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  bool supports_masking() const override { return true; }
  // any(x != mask_value) over the last axis; the mask of the input, if any, is replaced.
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;
  json get_config() const override;
  const MaskingOptions& options() const { return options_; }

 private:
  MaskingOptions options_;
};
KERAS_LAYER_HANDLE(Masking, MaskingOptions);

// Reads a Keras 2 or Keras 3 config (unknown keys ignored).
MaskingOptions masking_options_from_config(const json& config);

}  // namespace keras::layers
