// RNN (keras.layers.RNN): runs a cell over the time axis of (batch, time, features) sequences.
// The base of SimpleRNN, LSTM and GRU, which own their cell and write a flat config.
//
// Calling: inputs [sequences] or, with Keras's `initial_state=` (CallArgs::keywords, one
// "initial_state" per state), [sequences, state...]. call_with_state() packs that call.
// Outputs: the last output (batch, units), or every output (batch, time, units) with
// return_sequences; then, with return_state, the final states (batch, size) in state_size()
// order (StackedRNNCells: every cell's states, flat). A cell whose steps are images
// (ConvLSTMCell, RNNCell::step_rank) makes these (batch, [time,] spatial..., filters).
//
// Semantics as Keras 3 (backend rnn):
// - go_backwards: the sequence is read last step first; the returned sequence stays in processing
//   (reversed) order.
// - mask (batch, time) of the input: a masked step keeps the states of the previous step and
//   outputs the previous output (zeros with zero_output_for_mask, which Bidirectional sets when it
//   returns sequences). The output mask is the input mask with return_sequences, else none;
//   states carry none.
// - stateful: the final states of a call are the initial states of the next (batch size fixed by
//   the first call; ValueError for another); reset_states() zeroes them. They are not weights.
// - dropout/recurrent_dropout of the cell: masks drawn once per sequence, in training only.
// - unroll is accepted and recorded; every path runs the same step loop (run_sequence).
#pragma once
#include "layers/layer_handle.h"
#include "layers/nested_layer.h"
#include "layers/rnn_cell.h"

namespace keras::layers {

// The keys every recurrent layer adds to its cell's (Keras's RNN.__init__ arguments).
struct SequenceArgs {
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  bool unroll = false;
  bool zero_output_for_mask = false;
};

// The config of RNN. `cell` or `cells` (several: wrapped in a StackedRNNCells) is required.
struct RNNOptions {
  LayerPtr cell;
  std::vector<LayerPtr> cells;
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

// Weights: the cell's. Input: rank 3 (rank 2 + the cell's step_rank()) with a known feature
// extent (ShapeError otherwise, or when it changes after building). ValueError for a missing cell or a wrong initial_state count.
class RNNImpl : public Layer, public KeyedSublayers {
 public:
  explicit RNNImpl(RNNOptions options);
  std::string class_name() const override { return "RNN"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  bool supports_masking() const override { return true; }
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;
  json get_config() const override;
  std::vector<LayerPtr> sublayers() const override { return {cell_}; }
  std::vector<std::pair<std::string, LayerPtr>> keyed_sublayers() const override { return {{"cell", cell_}}; }
  void update_paths(const std::string& prefix) override;

  // The call with Keras's initial_state=states (eager).
  TensorList call_with_state(const Tensor& sequences, const TensorList& states, CallArgs args = {});
  // Zeroes the states of a stateful layer (Keras's reset_states); no-op before its first call.
  void reset_states();
  // The states a stateful layer carries into its next call (empty before the first).
  const TensorList& states() const { return states_; }

  const RNNCellPtr& cell() const { return cell_; }
  const SequenceArgs& sequence_args() const { return args_; }
  // Bidirectional forces zero_output_for_mask = return_sequences on its layers, as Keras.
  void set_zero_output_for_mask(bool zero) { args_.zero_output_for_mask = zero; }

 protected:
  RNNImpl(const LayerOptions& base, RNNCellPtr cell, SequenceArgs args);
  // Base keys and the sequence keys; the subclasses add their cell's keys.
  json sequence_config() const;

 private:
  struct SequenceResult {
    Tensor last;         // output of the last processed step (batch, units)
    Tensor sequence;     // (batch, time, units), with return_sequences
    TensorList states;   // final states
  };
  // The per-timestep loop: every call runs through here. A fused kernel (oneDNN RNN) replaces
  // this body where it supports the cell and the arguments.
  SequenceResult run_sequence(const Tensor& sequences, TensorList states, const Tensor& mask, bool training);
  TensorList initial_states_for(const TensorList& given, const Shape& step, DType dtype);

  RNNCellPtr cell_;
  SequenceArgs args_;
  TensorList states_;
  std::string prefix_;
};
KERAS_LAYER_HANDLE(RNN, RNNOptions);

// Keras's build_config of a recurrent layer: {"input_shape": ...}, or, built with initial states,
// {"shapes_dict": {"sequences_shape": ..., "initial_state_shape": [...]}} (build's two arguments).
json rnn_build_config(const Layer& layer);

// Reads the sequence keys of a Keras 2 or 3 recurrent layer config.
SequenceArgs sequence_args_from_config(const json& config);
// The sequence keys of any options struct that has them (LSTMOptions, GRUOptions, ...).
template <class O>
SequenceArgs sequence_args_of(const O& o) {
  return {o.return_sequences, o.return_state, o.go_backwards, o.stateful, o.unroll, o.zero_output_for_mask};
}
// Stores sequence keys into an options struct that has them.
template <class O>
void set_sequence_args(const SequenceArgs& a, O& o) {
  o.return_sequences = a.return_sequences;
  o.return_state = a.return_state;
  o.go_backwards = a.go_backwards;
  o.stateful = a.stateful;
  o.unroll = a.unroll;
  o.zero_output_for_mask = a.zero_output_for_mask;
}

}  // namespace keras::layers
