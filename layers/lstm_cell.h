// LSTMCell (keras.layers.LSTMCell): one LSTM timestep, Keras's gate order i, f, c, o.
//   z = x @ kernel + h @ recurrent_kernel + bias;  i, f, o = recurrent_activation(z_i, z_f, z_o)
//   c' = f * c + i * activation(z_c);  h' = o * activation(c');  output h', states [h', c'].
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"
#include "layers/rnn_cell.h"

namespace keras::layers {

// The config of LSTMCell (Keras keys and defaults).
struct LSTMCellOptions {
  int64_t units = 0;  // required, >= 1
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg recurrent_initializer = "orthogonal";
  InitializerArg bias_initializer = "zeros";
  bool unit_forget_bias = true;  // the forget gate's bias starts at 1
  RegularizerArg kernel_regularizer;
  RegularizerArg recurrent_regularizer;
  RegularizerArg bias_regularizer;
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;            // on the step input, in training
  double recurrent_dropout = 0.0;  // on h, in training
  std::optional<int64_t> seed;     // of the dropout masks
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: kernel (in, 4*units), recurrent_kernel (units, 4*units), bias (4*units,) when
// use_bias. Construction throws ValueError for units < 1, an unknown activation or a dropout
// rate outside [0, 1].
class LSTMCellImpl : public RNNCell {
 public:
  explicit LSTMCellImpl(LSTMCellOptions options);
  std::string class_name() const override { return "LSTMCell"; }
  std::vector<int64_t> state_size() const override { return {options_.units, options_.units}; }
  int64_t output_size() const override { return options_.units; }
  void build(const std::vector<Shape>& input_shapes) override;
  std::pair<Tensor, TensorList> step(const Tensor& x, const TensorList& states, bool training) override;
  std::optional<ops::RnnSequenceArgs> fused_sequence(bool training) const override;
  json get_config() const override;
  const LSTMCellOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  LSTMCellOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
};
KERAS_LAYER_HANDLE(LSTMCell, LSTMCellOptions);

// Keras's unit_forget_bias: an initializer of a (4*units,) bias that draws `base` for the i, c
// and o blocks and ones for f (LSTMCell, ConvLSTMCell).
InitializerPtr unit_forget_bias_initializer(InitializerPtr base, int64_t units);

// Reads a Keras 2 or 3 LSTMCell config (unknown keys ignored).
LSTMCellOptions lstm_cell_options_from_config(const json& config);

}  // namespace keras::layers
