// RepeatVector (keras.layers.RepeatVector): (batch, features) -> (batch, n, features), the input
// repeated n times along a new steps axis. Config: n.
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct RepeatVectorOptions {
  int64_t n = 1;  // >= 1 (ValueError otherwise); Keras requires it, so configs always carry it
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class RepeatVectorImpl : public Layer {
 public:
  explicit RepeatVectorImpl(RepeatVectorOptions options);
  std::string class_name() const override { return "RepeatVector"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // ShapeError unless one input of rank 2.
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RepeatVectorOptions& options() const { return options_; }

 private:
  RepeatVectorOptions options_;
};
KERAS_LAYER_HANDLE(RepeatVector, RepeatVectorOptions);

RepeatVectorOptions repeat_vector_options_from_config(const json& config);

}  // namespace keras::layers
