// StackedRNNCells (keras.layers.StackedRNNCells): cells run one after another within a timestep;
// cell k reads cell k-1's output. RNN(list of cells) wraps its cells in one.
//
// States: every cell's states in cell order, flattened (Keras 3 nests them per cell: an RNN with
// return_state returns them flat here, in the same order).
#pragma once
#include "layers/layer_handle.h"
#include "layers/nested_layer.h"
#include "layers/rnn_cell.h"

namespace keras::layers {

struct StackedRNNCellsOptions {
  std::vector<LayerPtr> cells;  // RNNCell layers (SimpleRNNCell, LSTMCell, GRUCell, ...), >= 1
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: each cell's, in cell order. ValueError for an empty list or a layer that is no cell.
class StackedRNNCellsImpl : public RNNCell, public KeyedSublayers {
 public:
  explicit StackedRNNCellsImpl(StackedRNNCellsOptions options);
  std::string class_name() const override { return "StackedRNNCells"; }
  std::vector<int64_t> state_size() const override;
  int64_t output_size() const override { return cells_.back()->output_size(); }
  void build(const std::vector<Shape>& input_shapes) override;
  std::pair<Tensor, TensorList> step(const Tensor& x, const TensorList& states, bool training) override;
  void reset_dropout_masks() override;
  std::vector<LayerPtr> sublayers() const override;
  std::vector<std::pair<std::string, LayerPtr>> keyed_sublayers() const override;
  void update_paths(const std::string& prefix) override;
  json get_config() const override;
  const std::vector<RNNCellPtr>& cells() const { return cells_; }

 private:
  std::vector<RNNCellPtr> cells_;
  std::string prefix_;
};
KERAS_LAYER_HANDLE(StackedRNNCells, StackedRNNCellsOptions);

// The RNNCell behind `layer`; ValueError naming `where` when it is none.
RNNCellPtr as_rnn_cell(const LayerPtr& layer, const std::string& where);

}  // namespace keras::layers
