// What the recurrent layers do beyond one call's numbers: masks (a padded batch gives what the
// unpadded sequences give one by one), go_backwards, stateful layers, initial_state, dropout in
// training, the masks they hand on, and the errors they raise.
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "backend/random.h"
#include "layers/bidirectional.h"
#include "layers/dense.h"
#include "layers/gru.h"
#include "layers/input_layer.h"
#include "layers/lstm.h"
#include "layers/lstm_cell.h"
#include "layers/rnn.h"
#include "layers/simple_rnn.h"
#include "layers/simple_rnn_cell.h"
#include "layers/time_distributed.h"
#include "support/expect_error.h"
#include "support/rnn_reference.h"

using namespace keras;
using keras::testing::expect_close;
using keras::testing::expect_error;
namespace L = keras::layers;

namespace {

constexpr int64_t kSteps = 5, kFeatures = 3;
const std::vector<int64_t> kLengths = {5, 3, 1};

// (3, 5, 3) random sequences whose padded steps (past each row's length) hold garbage, not zeros:
// the mask alone must keep them out.
Tensor padded_batch() { return random::normal({3, kSteps, kFeatures}, 0.0, 1.0, 99); }

Tensor length_mask() {
  std::vector<float> m;
  for (int64_t len : kLengths)
    for (int64_t t = 0; t < kSteps; ++t) m.push_back(t < len ? 1.0f : 0.0f);
  return ops::greater(Tensor::from_vector(m, {3, kSteps}), Tensor::zeros({3, kSteps}));
}

Tensor row(const Tensor& x, int64_t i, int64_t steps) {
  Shape begin(x.rank(), 0), size = x.shape();
  begin[0] = i;
  size[0] = 1;
  if (steps >= 0) size[1] = steps;
  return ops::slice(x, begin, size);
}

TensorList call_masked(Layer& layer, const Tensor& x, const Tensor& mask) {
  return layer(TensorList{x}, CallArgs{.training = false, .mask = {mask}});
}

// Row i of every output of the padded, masked call equals the call on sequence i alone; for
// sequence outputs, on its valid steps (padded steps: `padded_zero` -> zeros).
void expect_padded_equals_unpadded(const std::function<LayerPtr()>& make, bool sequences, bool padded_zero = false) {
  LayerPtr layer = make();
  Tensor x = padded_batch();
  TensorList padded = call_masked(*layer, x, length_mask());
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t len = kLengths[static_cast<size_t>(i)];
    TensorList alone = (*layer)(TensorList{row(x, i, len)}, {.training = false});
    ASSERT_EQ(alone.size(), padded.size());
    for (size_t o = 0; o < padded.size(); ++o) {
      const bool is_sequence = sequences && o == 0;
      std::string what = layer->class_name() + " row " + std::to_string(i) + " output " + std::to_string(o);
      expect_close(row(padded[o], i, is_sequence ? len : -1), alone[o], what);
      if (is_sequence && padded_zero && len < kSteps) {
        Tensor rest = ops::slice(padded[o], {i, len, 0}, {1, kSteps - len, -1});
        expect_close(rest, Tensor::zeros(rest.shape()), what + " padded steps");
      }
    }
  }
}

}  // namespace

TEST(RNNMasks, PaddedBatchGivesTheUnpaddedOutputsAndStates) {
  expect_padded_equals_unpadded([] { return LayerPtr(L::LSTM({.units = 4, .return_state = true})); }, false);
  expect_padded_equals_unpadded([] { return LayerPtr(L::GRU({.units = 4, .return_sequences = true, .return_state = true})); }, true);
  expect_padded_equals_unpadded([] { return LayerPtr(L::GRU({.units = 3, .reset_after = false, .return_state = true})); }, false);
  expect_padded_equals_unpadded([] { return LayerPtr(L::SimpleRNN({.units = 3, .return_sequences = true})); }, true);
  expect_padded_equals_unpadded([] {
    return LayerPtr(L::RNN({.cells = {L::SimpleRNNCell({.units = 3}), L::LSTMCell({.units = 2})}, .return_state = true}));
  }, false);
}

TEST(RNNMasks, GoBackwardsReadsOnlyTheValidSteps) {
  expect_padded_equals_unpadded([] { return LayerPtr(L::LSTM({.units = 3, .return_state = true, .go_backwards = true})); }, false);
}

TEST(RNNMasks, BidirectionalPaddedBatchGivesTheUnpaddedOutputs) {
  for (const char* mode : {"concat", "sum", "ave", "mul"}) {
    SCOPED_TRACE(mode);
    expect_padded_equals_unpadded([mode] {
      return LayerPtr(L::Bidirectional({.layer = L::LSTM({.units = 3, .return_sequences = true}), .merge_mode = mode}));
    }, true, true);  // both directions output zeros at padded steps (zero_output_for_mask)
  }
  expect_padded_equals_unpadded([] {
    return LayerPtr(L::Bidirectional({.layer = L::GRU({.units = 3, .return_state = true})}));
  }, false);
}

TEST(RNNMasks, OutputMaskIsTheInputMaskOnlyForSequences) {
  Tensor x = padded_batch(), mask = length_mask();
  auto seq = L::LSTM({.units = 2, .return_sequences = true, .return_state = true});
  TensorList ys = call_masked(*seq.ptr(), x, mask);
  ASSERT_EQ(ys.size(), 3u);
  ASSERT_TRUE(ys[0].keras_mask().defined());
  EXPECT_EQ(ys[0].keras_mask().to_vector<bool>(), mask.to_vector<bool>());
  EXPECT_FALSE(ys[1].keras_mask().defined());
  EXPECT_FALSE(ys[2].keras_mask().defined());
  auto last = L::GRU({.units = 2});
  EXPECT_FALSE(call_masked(*last.ptr(), x, mask)[0].keras_mask().defined());
  auto bi = L::Bidirectional({.layer = L::GRU({.units = 2, .return_sequences = true}), .merge_mode = ""});
  TensorList both = call_masked(*bi.ptr(), x, mask);
  ASSERT_EQ(both.size(), 2u);
  for (const auto& y : both) EXPECT_EQ(y.keras_mask().to_vector<bool>(), mask.to_vector<bool>());
  auto td = L::TimeDistributed({.layer = L::Dense({.units = 2})});
  EXPECT_EQ(call_masked(*td.ptr(), x, mask)[0].keras_mask().to_vector<bool>(), mask.to_vector<bool>());
}

TEST(RNNGoBackwards, EqualsTheForwardLayerOnTheReversedSequence) {
  auto back = L::LSTM({.units = 3, .return_sequences = true, .return_state = true, .go_backwards = true});
  auto fwd = L::LSTM({.units = 3, .return_sequences = true, .return_state = true});
  Tensor x = padded_batch();
  back(TensorList{x});
  fwd(TensorList{x});
  fwd->set_weights(back->get_weights());
  Tensor reversed = ops::take(x, Tensor::from_vector(std::vector<int64_t>{4, 3, 2, 1, 0}, {5}), 1);
  TensorList a = back(TensorList{x}), b = fwd(TensorList{reversed});
  // Keras keeps the backward sequence in processing order.
  for (size_t i = 0; i < a.size(); ++i) expect_close(a[i], b[i], "output " + std::to_string(i));
}

TEST(RNNStateful, TwoHalvesEqualOneCallAndResetStartsOver) {
  auto whole = L::GRU({.units = 3, .return_sequences = true});
  auto halves = L::GRU({.units = 3, .return_sequences = true, .stateful = true});
  Tensor x = random::normal({2, 6, kFeatures}, 0.0, 1.0, 5);
  Tensor full = whole(TensorList{x})[0];
  halves(TensorList{row(x, 0, -1)});  // builds (batch 1 is not kept: reset below)
  halves->set_weights(whole->get_weights());
  auto fresh = std::make_shared<L::GRUImpl>(L::GRUOptions{.units = 3, .return_sequences = true, .stateful = true});
  (*fresh)(TensorList{x});
  fresh->set_weights(whole->get_weights());
  fresh->reset_states();
  Tensor first = (*fresh)(TensorList{ops::slice(x, {0, 0, 0}, {2, 3, -1})})[0];
  Tensor second = (*fresh)(TensorList{ops::slice(x, {0, 3, 0}, {2, 3, -1})})[0];
  expect_close(ops::concatenate({first, second}, 1), full, "stateful halves");
  ASSERT_EQ(fresh->states().size(), 1u);
  fresh->reset_states();
  expect_close((*fresh)(TensorList{ops::slice(x, {0, 3, 0}, {2, 3, -1})})[0],
               whole(TensorList{ops::slice(x, {0, 3, 0}, {2, 3, -1})})[0], "after reset_states");
  expect_error<ValueError>([&] { (*fresh)(TensorList{random::normal({3, 2, kFeatures}, 0.0, 1.0, 6)}); },
                           {"stateful", "2", "3"});
}

TEST(RNNInitialState, KeywordStatesStartTheSequence) {
  auto lstm = L::LSTM({.units = 3, .return_state = true});
  Tensor x = padded_batch();
  TensorList plain = lstm(TensorList{x});
  TensorList zeros = lstm->call_with_state(x, {Tensor::zeros({3, 3}), Tensor::zeros({3, 3})});
  for (size_t i = 0; i < plain.size(); ++i) expect_close(zeros[i], plain[i], "zero initial state");
  // A sequence split in two: the second half started from the first half's states.
  TensorList head = lstm(TensorList{ops::slice(x, {0, 0, 0}, {3, 2, -1})});
  TensorList tail = lstm(TensorList{ops::slice(x, {0, 2, 0}, {3, 3, -1}), head[1], head[2]},
                         CallArgs{.keywords = {"initial_state", "initial_state"}});
  for (size_t i = 0; i < plain.size(); ++i) expect_close(tail[i], plain[i], "continued output " + std::to_string(i));
  expect_error<ValueError>([&] { lstm->call_with_state(x, {Tensor::zeros({3, 3})}); }, {"initial_state", "2", "1"});
  expect_error<ShapeError>([&] { lstm->call_with_state(x, {Tensor::zeros({3, 2}), Tensor::zeros({3, 3})}); },
                           {"initial_state[0]", "(3, 3)"});
}

TEST(RNNInitialState, BidirectionalSplitsForwardThenBackwardStates) {
  auto bi = L::Bidirectional({.layer = L::GRU({.units = 2, .return_state = true})});
  Tensor x = padded_batch();
  TensorList plain = bi(TensorList{x});
  ASSERT_EQ(plain.size(), 3u);  // merged output, forward h, backward h
  EXPECT_EQ(shape_str(plain[0].shape()), "(3, 4)");
  TensorList fwd_only = bi(TensorList{x, plain[1], Tensor::zeros({3, 2})},
                           CallArgs{.keywords = {"initial_state", "initial_state"}});
  Tensor fwd = bi->forward_layer()->call_with_state(x, {plain[1]})[0];
  expect_close(ops::slice(fwd_only[0], {0, 0}, {3, 2}), fwd, "forward half from its own initial state");
  expect_close(fwd_only[2], plain[2], "backward state unchanged by a zero initial state");
  expect_error<ValueError>([&] { bi(TensorList{x, plain[1]}, CallArgs{.keywords = {"initial_state"}}); }, {"even"});
}

TEST(RNNInitialState, FunctionalCallKeepsTheKeywordInputs) {
  auto seq = L::Input({4, kFeatures});
  auto h = L::Input({2});
  auto c = L::Input({2});
  auto outs = L::LSTM({.units = 2, .return_sequences = true, .return_state = true})(
      std::vector<KerasTensor>{seq, h, c}, CallArgs{.keywords = {"initial_state", "initial_state"}});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(shape_str(outs[0].shape), "(None, 4, 2)");
  EXPECT_EQ(shape_str(outs[2].shape), "(None, 2)");
  ASSERT_EQ(outs[0].node->args.keywords.size(), 2u);
}

TEST(RNNDropout, OneMaskPerSequenceInTrainingNoneInInference) {
  // With a zero recurrent kernel and the same input at every step, every step's output is the
  // same exactly when every step uses the same input dropout mask.
  auto rnn = L::SimpleRNN({.units = 6, .use_bias = false, .recurrent_initializer = "zeros", .dropout = 0.5,
                           .seed = 3, .return_sequences = true});
  Tensor step = random::normal({2, 1, 8}, 0.0, 1.0, 11);
  Tensor x = ops::concatenate({step, step, step, step}, 1);
  Tensor trained = rnn(TensorList{x}, {.training = true})[0];
  Tensor first = ops::slice(trained, {0, 0, 0}, {2, 1, -1});
  for (int64_t t = 1; t < 4; ++t) expect_close(ops::slice(trained, {0, t, 0}, {2, 1, -1}), first, "step " + std::to_string(t), 0);
  Tensor inferred = rnn(TensorList{x}, {.training = false})[0];
  auto plain = L::SimpleRNN({.units = 6, .use_bias = false, .return_sequences = true});
  plain(TensorList{x});
  plain->set_weights(rnn->get_weights());
  expect_close(inferred, plain(TensorList{x})[0], "inference ignores dropout");
  EXPECT_GT(ops::max(ops::abs(ops::subtract(trained, inferred))).item(), 1e-3) << "training applied no dropout";
  Tensor again = rnn(TensorList{x}, {.training = true})[0];
  EXPECT_GT(ops::max(ops::abs(ops::subtract(trained, again))).item(), 1e-6) << "the next sequence reused the mask";
}

TEST(RNNDropout, RecurrentDropoutTrainsAndLeavesInferenceAlone) {
  auto lstm = L::LSTM({.units = 3, .dropout = 0.3, .recurrent_dropout = 0.3, .seed = 1});
  auto plain = L::LSTM({.units = 3});
  Tensor x = padded_batch();
  Tensor a = lstm(TensorList{x}, {.training = true})[0];
  plain(TensorList{x});
  plain->set_weights(lstm->get_weights());
  expect_close(lstm(TensorList{x}, {.training = false})[0], plain(TensorList{x})[0], "inference");
  EXPECT_GT(ops::max(ops::abs(ops::subtract(a, plain(TensorList{x})[0]))).item(), 1e-4);
}

TEST(RNNErrors, ShapesOptionsAndWrappedLayers) {
  expect_error<ShapeError>([] { L::LSTM({.units = 2})(TensorList{Tensor::zeros({2, 3})}); }, {"LSTM", "(batch, time, features)"});
  expect_error<ValueError>([] { L::GRU({.units = 0}); }, {"units >= 1", "0"});
  expect_error<ValueError>([] { L::LSTM({.units = 2, .recurrent_activation = "nope"}); }, {"recurrent_activation", "nope"});
  expect_error<ValueError>([] { L::SimpleRNN({.units = 2, .dropout = 1.5}); }, {"dropout"});
  expect_error<ValueError>([] { L::Bidirectional({.layer = L::LSTM({.units = 2}), .merge_mode = "max"}); }, {"merge_mode", "max"});
  expect_error<ValueError>([] { L::Bidirectional({.layer = L::Dense({.units = 2})}); }, {"recurrent layer", "Dense"});
  expect_error<ValueError>([] {
    L::Bidirectional({.layer = L::LSTM({.units = 2}), .backward_layer = L::LSTM({.units = 2})});
  }, {"other way"});
  expect_error<ValueError>([] { L::RNN({.cell = L::Dense({.units = 2})}); }, {"RNN cell", "Dense"});
  expect_error<ValueError>([] { L::RNN(L::RNNOptions{}); }, {"a cell"});
  expect_error<ShapeError>([] { L::TimeDistributed({.layer = L::Dense({.units = 2})})(TensorList{Tensor::zeros({2, 3})}); },
                           {"rank >= 3"});
  auto built = L::LSTM({.units = 2});
  built(TensorList{Tensor::zeros({1, 2, 3})});
  expect_error<ShapeError>([&] { built(TensorList{Tensor::zeros({1, 2, 4})}); }, {"3 features", "(1, 2, 4)"});
}

TEST(RNNWeights, PathsFollowKerasNames) {
  auto bi = L::Bidirectional({.layer = L::LSTM({.units = 2, .name = "enc"}), .name = "bi"});
  bi(TensorList{Tensor::zeros({1, 2, 3})});
  std::vector<std::string> paths;
  for (const auto& w : bi->weights()) paths.push_back(w.path());
  EXPECT_EQ(paths, (std::vector<std::string>{"bi/forward_enc/lstm_cell/kernel", "bi/forward_enc/lstm_cell/recurrent_kernel",
                                             "bi/forward_enc/lstm_cell/bias", "bi/backward_enc/lstm_cell/kernel",
                                             "bi/backward_enc/lstm_cell/recurrent_kernel", "bi/backward_enc/lstm_cell/bias"}));
  bi->set_name("renamed");
  EXPECT_EQ(bi->weights()[0].path(), "renamed/forward_enc/lstm_cell/kernel");
  auto stacked = L::RNN({.cells = {L::LSTMCell({.units = 2}), L::LSTMCell({.units = 2})}, .name = "rnn"});
  stacked(TensorList{Tensor::zeros({1, 2, 3})});
  EXPECT_EQ(stacked->weights()[0].path(), "rnn/stacked_rnn_cells/lstm_cell/kernel");
  EXPECT_EQ(stacked->weights()[3].path(), "rnn/stacked_rnn_cells/lstm_cell_1/kernel");
}

TEST(RNNWeights, LSTMForgetGateBiasStartsAtOne) {
  auto lstm = L::LSTM({.units = 2});
  lstm(TensorList{Tensor::zeros({1, 2, 3})});
  EXPECT_EQ(lstm->weights()[2].value().to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 0}));
  auto plain = L::LSTM({.units = 2, .unit_forget_bias = false});
  plain(TensorList{Tensor::zeros({1, 2, 3})});
  EXPECT_EQ(plain->weights()[2].value().to_vector<float>(), std::vector<float>(8, 0.0f));
}
