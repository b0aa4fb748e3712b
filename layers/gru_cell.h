// GRUCell (keras.layers.GRUCell): one GRU timestep, Keras's gate order z (update), r (reset), h.
//   reset_after=true (Keras 3 default, cuDNN/oneDNN "linear before reset"):
//     hh = activation(x W_h + b_h + r * (h U_h + rb_h))
//   reset_after=false:  hh = activation(x W_h + b_h + (r * h) U_h)
//   h' = z * h + (1 - z) * hh;  output h', state [h'].
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"
#include "layers/rnn_cell.h"

namespace keras::layers {

// The config of GRUCell (Keras keys and defaults).
struct GRUCellOptions {
  int64_t units = 0;  // required, >= 1
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg recurrent_initializer = "orthogonal";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg recurrent_regularizer;
  RegularizerArg bias_regularizer;
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  bool reset_after = true;  // bias (2, 3*units): input bias row 0, recurrent bias row 1
  std::optional<int64_t> seed;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: kernel (in, 3*units), recurrent_kernel (units, 3*units), bias (3*units,) or, with
// reset_after, (2, 3*units). ValueError for units < 1, unknown activations, bad dropout rates.
class GRUCellImpl : public RNNCell {
 public:
  explicit GRUCellImpl(GRUCellOptions options);
  std::string class_name() const override { return "GRUCell"; }
  std::vector<int64_t> state_size() const override { return {options_.units}; }
  int64_t output_size() const override { return options_.units; }
  void build(const std::vector<Shape>& input_shapes) override;
  std::pair<Tensor, TensorList> step(const Tensor& x, const TensorList& states, bool training) override;
  std::optional<ops::RnnSequenceArgs> fused_sequence(bool training) const override;
  json get_config() const override;
  const GRUCellOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }  // undefined without use_bias

 private:
  GRUCellOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
};
KERAS_LAYER_HANDLE(GRUCell, GRUCellOptions);

// Reads a Keras 2 or 3 GRUCell config (unknown keys ignored; reset_after defaults to true).
GRUCellOptions gru_cell_options_from_config(const json& config);

}  // namespace keras::layers
