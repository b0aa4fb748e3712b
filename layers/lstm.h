// LSTM (keras.layers.LSTM): an RNN over an LSTMCell, with the cell's options flat in its own
// (Keras 3 config: the sequence keys, the cell's keys, activity_regularizer). See rnn.h for the
// call, outputs (return_state: [output, h, c]), masks, stateful and go_backwards.
#pragma once
#include "layers/lstm_cell.h"
#include "layers/rnn.h"

namespace keras::layers {

struct LSTMOptions {
  int64_t units = 0;  // required, >= 1
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg recurrent_initializer = "orthogonal";
  InitializerArg bias_initializer = "zeros";
  bool unit_forget_bias = true;
  RegularizerArg kernel_regularizer;
  RegularizerArg recurrent_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<int64_t> seed;
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

// Weights: the cell's kernel, recurrent_kernel, bias (paths "<lstm>/lstm_cell/kernel", ...).
class LSTMImpl : public RNNImpl {
 public:
  explicit LSTMImpl(LSTMOptions options);
  std::string class_name() const override { return "LSTM"; }
  json get_config() const override;
  const LSTMOptions& options() const { return options_; }

 private:
  LSTMOptions options_;
};
KERAS_LAYER_HANDLE(LSTM, LSTMOptions);

LSTMOptions lstm_options_from_config(const json& config);

}  // namespace keras::layers
