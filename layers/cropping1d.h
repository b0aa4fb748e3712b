// Cropping1D (keras.layers.Cropping1D): removes cropping.first steps at the start and
// cropping.second at the end of (batch, steps, channels). Config: cropping [start, end].
#pragma once
#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct Cropping1DOptions {
  PairArg cropping = 1;  // non-negative (ValueError otherwise); one int crops both ends
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class Cropping1DImpl : public Layer {
 public:
  explicit Cropping1DImpl(Cropping1DOptions options);
  std::string class_name() const override { return "Cropping1D"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // ShapeError unless one input of rank 3 with more (known) steps than the cropping removes.
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const Cropping1DOptions& options() const { return options_; }

 private:
  Cropping1DOptions options_;
};
KERAS_LAYER_HANDLE(Cropping1D, Cropping1DOptions);

Cropping1DOptions cropping1d_options_from_config(const json& config);

// ShapeError naming `where` unless `shapes` is one (batch, steps, channels) shape; shared by the
// 1-D sequence shape layers.
void require_one_sequence_input(const std::vector<Shape>& shapes, const std::string& where);

}  // namespace keras::layers
