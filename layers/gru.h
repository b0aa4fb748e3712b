// GRU (keras.layers.GRU): an RNN over a GRUCell, with the cell's options flat in its own
// (Keras 3 config: the sequence keys, the cell's keys, activity_regularizer). See rnn.h for the
// call, outputs (return_state: [output, h]), masks, stateful and go_backwards.
#pragma once
#include "layers/gru_cell.h"
#include "layers/rnn.h"

namespace keras::layers {

struct GRUOptions {
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
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  bool reset_after = true;  // bias (2, 3*units); Keras 3 default
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

// Weights: the cell's kernel, recurrent_kernel, bias (paths "<gru>/gru_cell/kernel", ...).
class GRUImpl : public RNNImpl {
 public:
  explicit GRUImpl(GRUOptions options);
  std::string class_name() const override { return "GRU"; }
  json get_config() const override;
  const GRUOptions& options() const { return options_; }

 private:
  GRUOptions options_;
};
KERAS_LAYER_HANDLE(GRU, GRUOptions);

GRUOptions gru_options_from_config(const json& config);

}  // namespace keras::layers
