// RNNCell: the base of the cells a recurrent layer (RNN, LSTM, GRU, SimpleRNN, Bidirectional)
// runs over time: SimpleRNNCell, LSTMCell, GRUCell and StackedRNNCells.
//
// A cell maps one timestep: step(x_t (batch, features), states) -> (output (batch,
// output_size()), new states, one per state_size() entry, each (batch, size)). It is built for
// the step input shape (batch, features), as Keras builds cells. Called on its own as a layer
// (Keras's cell(inputs, states)), its inputs are [x_t, state...] and its outputs
// [output, new state...].
//
// Dropout (Keras's DropoutRNNCell): in training, the input and recurrent dropout masks are drawn
// once per sequence and reused by every step; the RNN calls reset_dropout_masks() before each
// sequence. `count` masks (one per gate in Keras's implementation=1, used with
// recurrent_dropout) or one.
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "backend/ops_rnn.h"
#include "layers/layer.h"

namespace keras {

class RNNCell : public Layer {
 public:
  using Layer::Layer;
  // Sizes of the states (LSTM: {units, units}); a stacked cell lists every cell's states in order.
  virtual std::vector<int64_t> state_size() const = 0;
  virtual int64_t output_size() const = 0;
  // One timestep. Precondition: built for x's feature extent; states match state_size().
  virtual std::pair<Tensor, TensorList> step(const Tensor& x, const TensorList& states, bool training) = 0;
  // Forgets the dropout masks of the last sequence (no-op for cells without dropout).
  virtual void reset_dropout_masks();
  // The weights and activations of this cell as one fused ops::rnn_sequence call (the caller adds
  // x, states, mask and direction), when a whole sequence can run in that op: the built-in cells
  // with no dropout in effect. nullopt: run step() per timestep.
  virtual std::optional<ops::RnnSequenceArgs> fused_sequence(bool training) const { return std::nullopt; }
  // Cells whose step is not a (batch, features) vector (ConvLSTM: (batch, spatial..., channels))
  // override these three; `step` is a step input's shape with the batch axis (extents may be -1).
  // Non-batch axes of a step input (1: features).
  virtual int step_rank() const { return 1; }
  // The extent the weights are built for (the features, a ConvLSTM's channels); < 1: unknown.
  virtual int64_t step_features(const Shape& step) const { return step.back(); }
  // Shapes of the output and of each state of a step (default: (batch, output_size()) and
  // (batch, n) per state_size() entry).
  virtual Shape step_output_shape(const Shape& step) const;
  virtual std::vector<Shape> state_shapes(const Shape& step) const;
  // Zero states of `dtype` for a step input of shape `step` (concrete extents).
  TensorList initial_state(const Shape& step, DType dtype = DType::float32) const;

  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;

 protected:
  // The `count` dropout masks of `rate` for tensors like `like` (batch, n), drawn on first use
  // per sequence and kept in `slot`; empty when rate is 0 or 1 (Keras applies none then).
  const TensorList& dropout_masks(TensorList& slot, const Tensor& like, double rate, int count,
                                  std::optional<int64_t> seed);
  TensorList input_masks_, recurrent_masks_;
};
using RNNCellPtr = std::shared_ptr<RNNCell>;

// x * mask when `masks` holds one (entry `i`, or the only one), else x.
Tensor apply_dropout_mask(const Tensor& x, const TensorList& masks, size_t i = 0);

}  // namespace keras
