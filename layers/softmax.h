// Softmax (keras.layers.Softmax): softmax over one axis (default the last). Config: axis.
#pragma once
#include <optional>

#include "layers/layer_handle.h"

namespace keras::layers {

struct SoftmaxOptions {
  int64_t axis = -1;  // IndexError at call time when outside the input's rank
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class SoftmaxImpl : public Layer {
 public:
  explicit SoftmaxImpl(SoftmaxOptions options);
  std::string class_name() const override { return "Softmax"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const SoftmaxOptions& options() const { return options_; }

 private:
  SoftmaxOptions options_;
};
KERAS_LAYER_HANDLE(Softmax, SoftmaxOptions);

// Reads a Keras 2 or Keras 3 config (unknown keys ignored).
SoftmaxOptions softmax_options_from_config(const json& config);

}  // namespace keras::layers
