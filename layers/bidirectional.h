// Bidirectional (keras.layers.Bidirectional): runs a recurrent layer forward and a copy of it
// backward (go_backwards) over the same sequences and merges their outputs.
//
// Construction as Keras: `layer` is rebuilt from its config as "forward_<name>"; the backward
// layer is `backward_layer` when given (it must go the other way and share stateful,
// return_sequences and return_state), else a copy of `layer` with go_backwards and the name
// "backward_<name>". Both get zero_output_for_mask = return_sequences.
// Outputs: merge_mode "concat" (last axis), "sum", "mul", "ave": one output; "" (Keras's None):
// the forward and the backward output. With return_sequences the backward sequence is flipped
// back into time order. return_state appends the forward states, then the backward ones.
// initial_state (keyword): the forward layer's states, then the backward layer's.
// Mask: passed to both layers; the output mask is the input mask with return_sequences.
#pragma once
#include "layers/layer_handle.h"
#include "layers/nested_layer.h"
#include "layers/rnn.h"

namespace keras::layers {

struct BidirectionalOptions {
  LayerPtr layer;                  // required: an RNN (RNN, SimpleRNN, LSTM, GRU)
  std::string merge_mode = "concat";  // concat, sum, mul, ave, or "" (None)
  LayerPtr backward_layer;         // optional
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: the forward layer's, then the backward layer's. ValueError for a missing or
// non-recurrent layer, an unknown merge_mode, or layers that do not fit together (see above).
class BidirectionalImpl : public Layer, public KeyedSublayers {
 public:
  explicit BidirectionalImpl(BidirectionalOptions options);
  std::string class_name() const override { return "Bidirectional"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  bool supports_masking() const override { return true; }
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;
  json get_config() const override;
  std::vector<LayerPtr> sublayers() const override { return {forward_, backward_}; }
  std::vector<std::pair<std::string, LayerPtr>> keyed_sublayers() const override {
    return {{"forward_layer", forward_}, {"backward_layer", backward_}};
  }
  void update_paths(const std::string& prefix) override;
  // Zeroes both layers' states (stateful layers only; ValueError otherwise, as Keras).
  void reset_states();

  const std::shared_ptr<RNNImpl>& forward_layer() const { return forward_; }
  const std::shared_ptr<RNNImpl>& backward_layer() const { return backward_; }
  const std::string& merge_mode() const { return merge_mode_; }

 private:
  size_t output_count() const { return merge_mode_.empty() ? 2 : 1; }
  Tensor merge(const Tensor& y, const Tensor& y_rev) const;

  std::shared_ptr<RNNImpl> forward_, backward_;
  std::string merge_mode_;
  std::string prefix_;
};
KERAS_LAYER_HANDLE(Bidirectional, BidirectionalOptions);

}  // namespace keras::layers
