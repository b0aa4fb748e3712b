// Dropout (keras.layers.Dropout): inverted dropout while training, identity otherwise.
#pragma once
#include <optional>

#include "layers/layer_handle.h"

namespace keras::layers {

struct DropoutOptions {
  double rate = 0.0;                   // in [0, 1); ValueError otherwise
  // Shape of the keep/drop decisions, broadcast over the input: one entry per input axis, each
  // -1 (Keras's None: the input's extent) or a positive extent that is 1 or the input's.
  // (-1, 1, 1, 1) drops whole samples (EfficientNet's stochastic depth). Unset: every element.
  std::optional<Shape> noise_shape;
  std::optional<int64_t> seed;         // seeds this layer's mask stream; unseeded: global stream
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Training: each element (each element of the noise shape, broadcast) is zeroed with probability
// `rate` and the rest scaled by 1/(1-rate), the masks drawn from the layer's own generator
// (seeded from `seed`, else from the global generator on first use). Inference: returns the
// input unchanged. ValueError for a noise_shape entry that is 0 or below -1; ShapeError when the
// input does not fit the noise shape (another rank, or an extent that is neither 1 nor the input's).
class DropoutImpl : public Layer {
 public:
  explicit DropoutImpl(DropoutOptions options);
  std::string class_name() const override { return "Dropout"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const DropoutOptions& options() const { return options_; }

 private:
  DropoutOptions options_;
};
KERAS_LAYER_HANDLE(Dropout, DropoutOptions);

// Reads a Keras 2 or Keras 3 Dropout config (unknown keys ignored).
DropoutOptions dropout_options_from_config(const json& config);

}  // namespace keras::layers
