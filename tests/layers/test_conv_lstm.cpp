// ConvLSTM1D/2D/3D: the shared layer harness on each rank (shapes, weights, config and weights
// round trips, a training step, frozen weights, float32 gradients through the step loop), a
// float64 gradient check of the layer, masks, stateful halves, channels_first, and the option
// errors. Keras's own outputs, configs and weights: tests/keras/saving/test_sequence_fixtures.cpp.
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "layers/conv_lstm.h"
#include "layers/lstm_cell.h"
#include "layers/stacked_rnn_cells.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"
#include "support/rnn_reference.h"

using namespace keras;
using keras::testing::expect_close;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

TEST(ConvLSTMHarness, ConvLSTM2DSameSequencesAndStates) {
  run_layer_harness({.name = "ConvLSTM2D same, return_sequences, return_state",
                     .make = [] {
                       return LayerPtr(L::ConvLSTM2D({.filters = 1, .kernel_size = {2, 3}, .padding = "same",
                                                      .return_sequences = true, .return_state = true}));
                     },
                     .input_shape = {2, 3, 4, 4, 2},
                     .weight_shapes = {{2, 3, 2, 4}, {2, 3, 1, 4}, {4}},
                     .gradcheck_input_shape = {1, 2, 2, 2, 1}});
}

TEST(ConvLSTMHarness, ConvLSTM1DStridedBackwardsNoBias) {
  run_layer_harness({.name = "ConvLSTM1D strides 2, go_backwards, no bias",
                     .make = [] {
                       return LayerPtr(L::ConvLSTM1D({.filters = 1, .kernel_size = 2, .strides = 2, .use_bias = false,
                                                      .go_backwards = true}));
                     },
                     .input_shape = {2, 3, 6, 2},
                     .weight_shapes = {{2, 2, 4}, {2, 1, 4}},
                     .gradcheck_input_shape = {1, 2, 4, 1}});
}

TEST(ConvLSTMHarness, ConvLSTM3DSame) {
  run_layer_harness({.name = "ConvLSTM3D same, return_sequences",
                     .make = [] {
                       return LayerPtr(L::ConvLSTM3D({.filters = 1, .kernel_size = {2, 2, 1}, .padding = "same",
                                                      .return_sequences = true}));
                     },
                     .input_shape = {2, 2, 3, 3, 2, 2},
                     .weight_shapes = {{2, 2, 1, 2, 4}, {2, 2, 1, 1, 4}, {4}},
                     .gradcheck_input_shape = {1, 2, 2, 2, 1, 1}});
}

TEST(ConvLSTMHarness, ConvLSTM2DChannelsFirstDilated) {
  run_layer_harness({.name = "ConvLSTM2D channels_first, dilation 2",
                     .make = [] {
                       return LayerPtr(L::ConvLSTM2D({.filters = 1, .kernel_size = 2, .data_format = "channels_first",
                                                      .dilation_rate = 2, .return_state = true}));
                     },
                     .input_shape = {2, 3, 1, 5, 5},
                     .weight_shapes = {{2, 2, 1, 4}, {2, 2, 1, 4}, {4}},
                     .gradcheck_input_shape = {1, 2, 1, 3, 3}});
}

// Central differences in float64 (the harness checks float32): the input and every weight, with
// the weights rebound to float64 copies and the layer's call run as is.
TEST(ConvLSTMGradients, Float64LayerGradients) {
  auto layer = L::ConvLSTM2D({.filters = 2, .kernel_size = {2, 3}, .strides = {2, 1}, .padding = "same",
                              .return_sequences = true});
  Tensor x32 = random::normal({1, 3, 3, 3, 2}, 0.0, 1.0, 11);
  layer(TensorList{x32});
  const auto weights = layer->trainable_weights();
  TensorList inputs{x32.astype(DType::float64)};
  for (const auto& w : weights) inputs.push_back(w.value().detach().astype(DType::float64));
  EXPECT_TRUE(keras::testing::check_gradients("ConvLSTM2D float64", [&](const TensorList& in) {
    keras::testing::harness_detail::ScopedRebind rebind(weights, in, 1);
    return layer->call(TensorList{in[0]}, CallContext{})[0];
  }, inputs));
}

// A masked step keeps the states: the last two steps masked give the two-step sequence's result.
TEST(ConvLSTMSemantics, MaskedStepsKeepTheStates) {
  auto layer = L::ConvLSTM1D({.filters = 3, .kernel_size = 2, .padding = "same"});
  Tensor x = random::normal({2, 4, 5, 2}, 0.0, 1.0, 3);
  Tensor mask = ops::greater(Tensor::from_vector(std::vector<float>{1, 1, 0, 0, 1, 1, 1, 1}, {2, 4}),
                             Tensor::zeros({2, 4}));
  Tensor masked = layer(TensorList{x}, CallArgs{.training = false, .mask = {mask}})[0];
  Tensor short_row = layer(TensorList{ops::slice(x, {0, 0, 0, 0}, {1, 2, 5, 2})})[0];
  Tensor full_row = layer(TensorList{ops::slice(x, {1, 0, 0, 0}, {1, 4, 5, 2})})[0];
  expect_close(ops::slice(masked, {0, 0, 0}, {1, 5, 3}), short_row, "row 0 (2 real steps)");
  expect_close(ops::slice(masked, {1, 0, 0}, {1, 5, 3}), full_row, "row 1 (unmasked)");
}

TEST(ConvLSTMSemantics, StatefulHalvesEqualOneCall) {
  auto whole = L::ConvLSTM2D({.filters = 2, .kernel_size = 2, .return_sequences = true});
  Tensor x = random::normal({2, 4, 3, 3, 1}, 0.0, 1.0, 5);
  Tensor full = whole(TensorList{x})[0];
  auto halves = L::ConvLSTM2D({.filters = 2, .kernel_size = 2, .return_sequences = true, .stateful = true});
  halves(TensorList{x});
  halves->set_weights(whole->get_weights());
  halves->reset_states();
  Tensor first = halves(TensorList{ops::slice(x, {0, 0, 0, 0, 0}, {2, 2, 3, 3, 1})})[0];
  Tensor second = halves(TensorList{ops::slice(x, {0, 2, 0, 0, 0}, {2, 2, 3, 3, 1})})[0];
  expect_close(ops::concatenate({first, second}, 1), full, "stateful halves");
  ASSERT_EQ(halves->states().size(), 2u);
  EXPECT_EQ(halves->states()[0].shape(), (Shape{2, 2, 2, 2}));
}

// channels_first is channels_last on transposed steps (the same weights).
TEST(ConvLSTMSemantics, ChannelsFirstMatchesChannelsLast) {
  auto last = L::ConvLSTM2D({.filters = 2, .kernel_size = {2, 3}, .strides = {1, 2}, .return_sequences = true});
  auto first = L::ConvLSTM2D({.filters = 2, .kernel_size = {2, 3}, .strides = {1, 2}, .data_format = "channels_first",
                              .return_sequences = true});
  Tensor x = random::normal({2, 3, 4, 5, 3}, 0.0, 1.0, 9);  // (batch, time, rows, cols, channels)
  Tensor want = last(TensorList{x})[0];
  first(TensorList{ops::transpose(x, {0, 1, 4, 2, 3})});
  first->set_weights(last->get_weights());
  Tensor got = first(TensorList{ops::transpose(x, {0, 1, 4, 2, 3})})[0];
  expect_close(ops::transpose(got, {0, 1, 3, 4, 2}), want, "channels_first");
}

// An initial state has the output's step shape; the wrong one names the expected shape.
TEST(ConvLSTMSemantics, InitialStateShapes) {
  auto layer = L::ConvLSTM2D({.filters = 2, .kernel_size = 3, .strides = 2});
  Tensor x = random::normal({1, 2, 5, 5, 1}, 0.0, 1.0, 7);
  Tensor h = random::normal({1, 2, 2, 2}, 0.0, 1.0, 8);
  EXPECT_EQ(layer->call_with_state(x, {h, h})[0].shape(), (Shape{1, 2, 2, 2}));
  expect_error<ShapeError>([&] { layer->call_with_state(x, {h, Tensor::zeros({1, 3, 3, 2})}); },
                           {"initial_state[1]", "(1, 2, 2, 2)", "(1, 3, 3, 2)"});
}

TEST(ConvLSTMErrors, OptionsAndInputs) {
  expect_error<ValueError>([] { L::ConvLSTM2D({.filters = 2, .kernel_size = {3, 3, 3}}); }, {"ConvLSTM2D", "kernel_size"});
  expect_error<ValueError>([] { L::ConvLSTM1D({.filters = 0, .kernel_size = 3}); }, {"filters >= 1"});
  expect_error<ValueError>([] { L::ConvLSTM2D({.filters = 1, .kernel_size = 3, .padding = "causal"}); },
                           {"padding", "'causal'"});
  expect_error<ValueError>([] { L::ConvLSTM2D({.filters = 1, .kernel_size = 3, .strides = 2, .dilation_rate = 2}); },
                           {"strides = 1 when dilation_rate > 1"});
  expect_error<ValueError>([] { L::ConvLSTM3D({.filters = 1, .kernel_size = 2, .recurrent_activation = "nope"}); },
                           {"recurrent_activation", "'nope'"});
  auto layer = L::ConvLSTM2D({.filters = 1, .kernel_size = 3, .name = "clstm"});
  expect_error<ShapeError>([&] { layer(TensorList{Tensor::zeros({1, 2, 5, 5})}); },
                           {"clstm", "rank 5", "(1, 2, 5, 5)"});
  expect_error<ShapeError>([&] { layer(TensorList{Tensor::zeros({1, 2, 2, 2, 1})}); }, {"clstm", "kernel"});
}

// A StackedRNNCells hands vectors from cell to cell; a ConvLSTMCell in one is refused when the
// stack is made, not deep inside a call.
TEST(ConvLSTMErrors, StackedRNNCellsRefusesImageCells) {
  auto cell = std::make_shared<L::ConvLSTMCellImpl>(
      L::ConvLSTMCellOptions{.filters = 2, .kernel_size = {3, 3}, .strides = {1, 1}, .padding = "same", .dilation_rate = {1, 1}});
  expect_error<ValueError>([&] { L::StackedRNNCells({.cells = {L::LSTMCell({.units = 2}).ptr(), cell}}); },
                           {"StackedRNNCells", "cells", "ConvLSTMCell", "Stack ConvLSTM1D/2D/3D layers"});
}
