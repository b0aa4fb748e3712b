// SimpleRNN (keras.layers.SimpleRNN): an RNN over a SimpleRNNCell, with the cell's options flat in its own
// (Keras 3 config: the sequence keys, the cell's keys, activity_regularizer). See rnn.h for the
// call, outputs (return_state: [output, h]), masks, stateful and go_backwards.
#pragma once
#include "layers/simple_rnn_cell.h"
#include "layers/rnn.h"

namespace keras::layers {

struct SimpleRNNOptions {
  int64_t units = 0;  // required, >= 1
  std::string activation = "tanh";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg recurrent_initializer = "orthogonal";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg recurrent_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<int64_t> seed;  // of the dropout masks; not in the config (as Keras 3)
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  bool unroll = false;
  bool zero_output_for_mask = false;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: the cell's kernel, recurrent_kernel, bias (paths "<simple_rnn>/simple_rnn_cell/kernel", ...).
class SimpleRNNImpl : public RNNImpl {
 public:
  explicit SimpleRNNImpl(SimpleRNNOptions options);
  std::string class_name() const override { return "SimpleRNN"; }
  json get_config() const override;
  const SimpleRNNOptions& options() const { return options_; }

 private:
  SimpleRNNOptions options_;
};
KERAS_LAYER_HANDLE(SimpleRNN, SimpleRNNOptions);

SimpleRNNOptions simple_rnn_options_from_config(const json& config);

}  // namespace keras::layers
