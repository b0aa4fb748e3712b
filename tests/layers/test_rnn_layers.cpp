// Every recurrent layer through the shared layer harness (shapes, weights, config and weights
// round trips, a training step, frozen weights, gradients through the per-step loop), on every
// output of the multi-output forms (return_state, Bidirectional merge_mode None).
#include <gtest/gtest.h>

#include "layers/bidirectional.h"
#include "layers/dense.h"
#include "layers/gru.h"
#include "layers/gru_cell.h"
#include "layers/lstm.h"
#include "layers/lstm_cell.h"
#include "layers/rnn.h"
#include "layers/simple_rnn.h"
#include "layers/simple_rnn_cell.h"
#include "layers/time_distributed.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

// Input (batch 2, 4 steps, 3 features); gradients on (1, 2, 2) (each element of each input
// and weight is perturbed, for every output: kept tiny).
TEST(RNNLayersHarness, SimpleRNN) {
  run_layer_harness({.name = "SimpleRNN",
                     .make = [] { return LayerPtr(L::SimpleRNN({.units = 3})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 3}, {3, 3}, {3}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, LSTMSequencesAndStates) {
  run_layer_harness({.name = "LSTM return_sequences return_state",
                     .make = [] { return LayerPtr(L::LSTM({.units = 2, .return_sequences = true, .return_state = true})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 8}, {2, 8}, {8}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, LSTMBackwardsNoBias) {
  run_layer_harness({.name = "LSTM go_backwards, no bias",
                     .make = [] { return LayerPtr(L::LSTM({.units = 2, .use_bias = false, .go_backwards = true})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 8}, {2, 8}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, GRUResetAfter) {
  run_layer_harness({.name = "GRU reset_after",
                     .make = [] { return LayerPtr(L::GRU({.units = 2, .return_state = true})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 6}, {2, 6}, {2, 6}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, GRUResetBefore) {
  run_layer_harness({.name = "GRU reset_after=false",
                     .make = [] { return LayerPtr(L::GRU({.units = 2, .reset_after = false, .return_sequences = true})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 6}, {2, 6}, {6}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, RNNOverGRUCell) {
  run_layer_harness({.name = "RNN(GRUCell)",
                     .make = [] { return LayerPtr(L::RNN({.cell = L::GRUCell({.units = 2}), .go_backwards = true})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 6}, {2, 6}, {2, 6}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, RNNOverStackedCells) {
  run_layer_harness({.name = "RNN([SimpleRNNCell, LSTMCell]) return_state",
                     .make = [] {
                       return LayerPtr(L::RNN({.cells = {L::SimpleRNNCell({.units = 2}), L::LSTMCell({.units = 2})},
                                               .return_sequences = true, .return_state = true}));
                     },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 2}, {2, 2}, {2}, {2, 8}, {2, 8}, {8}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, LSTMCellOnItsOwn) {
  run_layer_harness({.name = "LSTMCell(x, [h, c])",
                     .make = [] { return LayerPtr(L::LSTMCell({.units = 2})); },
                     .weight_shapes = {{3, 8}, {2, 8}, {8}},
                     .input_shapes = {{2, 3}, {2, 2}, {2, 2}},
                     .gradcheck_input_shapes = {{1, 2}, {1, 2}, {1, 2}}});
}

TEST(RNNLayersHarness, GRUCellOnItsOwn) {
  run_layer_harness({.name = "GRUCell(x, [h])",
                     .make = [] { return LayerPtr(L::GRUCell({.units = 2, .reset_after = false})); },
                     .weight_shapes = {{3, 6}, {2, 6}, {6}},
                     .input_shapes = {{2, 3}, {2, 2}},
                     .gradcheck_input_shapes = {{1, 2}, {1, 2}}});
}

TEST(RNNLayersHarness, SimpleRNNCellOnItsOwn) {
  run_layer_harness({.name = "SimpleRNNCell(x, [h])",
                     .make = [] { return LayerPtr(L::SimpleRNNCell({.units = 2, .activation = "relu"})); },
                     .weight_shapes = {{3, 2}, {2, 2}, {2}},
                     .input_shapes = {{2, 3}, {2, 2}},
                     .gradcheck_input_shapes = {{1, 2}, {1, 2}}});
}

class BidirectionalHarness : public ::testing::TestWithParam<std::string> {};

// The merge modes over SimpleRNN (the cheapest cell to gradient-check); LSTM below.
TEST_P(BidirectionalHarness, EveryMergeMode) {
  const std::string mode = GetParam() == "none" ? "" : GetParam();
  run_layer_harness({.name = "Bidirectional(SimpleRNN) merge_mode " + GetParam(),
                     .make = [mode] {
                       return LayerPtr(L::Bidirectional(
                           {.layer = L::SimpleRNN({.units = 2, .return_sequences = true, .return_state = mode.empty()}),
                            .merge_mode = mode}));
                     },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 2}, {2, 2}, {2}, {3, 2}, {2, 2}, {2}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

INSTANTIATE_TEST_SUITE_P(Modes, BidirectionalHarness, ::testing::Values("concat", "sum", "mul", "ave", "none"));

TEST(RNNLayersHarness, BidirectionalLSTMStates) {
  run_layer_harness({.name = "Bidirectional(LSTM) return_state",
                     .make = [] { return LayerPtr(L::Bidirectional({.layer = L::LSTM({.units = 2, .return_state = true})})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 8}, {2, 8}, {8}, {3, 8}, {2, 8}, {8}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, BidirectionalWithBackwardLayer) {
  run_layer_harness({.name = "Bidirectional(GRU, backward_layer=SimpleRNN)",
                     .make = [] {
                       return LayerPtr(L::Bidirectional(
                           {.layer = L::GRU({.units = 2}),
                            .backward_layer = L::SimpleRNN({.units = 2, .go_backwards = true, .name = "back"})}));
                     },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 6}, {2, 6}, {2, 6}, {3, 2}, {2, 2}, {2}},
                     .gradcheck_input_shape = {1, 2, 2}});
}

TEST(RNNLayersHarness, TimeDistributedDense) {
  run_layer_harness({.name = "TimeDistributed(Dense)",
                     .make = [] { return LayerPtr(L::TimeDistributed({.layer = L::Dense({.units = 2, .activation = "tanh"})})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {{3, 2}, {2}}});
}
