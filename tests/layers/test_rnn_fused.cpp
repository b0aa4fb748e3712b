// The recurrent layers run whole sequences through the fused ops::rnn_sequence when their cell
// allows it (RNNCell::fused_sequence) and through the per-timestep cell loop otherwise. Both paths
// must agree exactly enough to be interchangeable: outputs, final states and every gradient, with
// masks, go_backwards, initial states and zero_output_for_mask.
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "layers/gru_cell.h"
#include "layers/lstm_cell.h"
#include "layers/rnn.h"
#include "layers/simple_rnn_cell.h"
#include "layers/stacked_rnn_cells.h"
#include "support/rnn_reference.h"

using namespace keras;
using keras::testing::expect_close;
namespace L = keras::layers;

namespace {

struct Case {
  std::string name;
  std::function<LayerPtr()> cell;
  size_t states;
};

std::vector<Case> cases() {
  return {
      {"LSTMCell", [] { return LayerPtr(L::LSTMCell({.units = 4})); }, 2},
      {"GRUCell reset_after", [] { return LayerPtr(L::GRUCell({.units = 4})); }, 1},
      {"GRUCell reset_before", [] { return LayerPtr(L::GRUCell({.units = 4, .reset_after = false})); }, 1},
      {"SimpleRNNCell relu", [] { return LayerPtr(L::SimpleRNNCell({.units = 4, .activation = "relu"})); }, 1},
  };
}

// Rows of length 5, 3 and 0 real steps (the last one fully padded).
Tensor lengths_mask() {
  std::vector<float> m = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
  return ops::greater(Tensor::from_vector(m, {3, 5}), Tensor::zeros({3, 5}));
}

}  // namespace

TEST(RnnFused, FusedSequenceAndStepLoopAgree) {
  const Tensor x = random::normal({3, 5, 3}, 0.0, 1.0, 5);
  for (const auto& c : cases()) {
    for (bool masked : {false, true})
      for (bool backwards : {false, true})
        for (bool zero_output : {false, true}) {
          const std::string what = c.name + (masked ? " masked" : "") + (backwards ? " go_backwards" : "") +
                                   (zero_output ? " zero_output_for_mask" : "");
          LayerPtr cell = c.cell();
          // The same cell (same weights) runs fused, and, behind a one-cell StackedRNNCells that has
          // no fused form, step by step.
          auto fused = L::RNN({.cell = cell, .return_sequences = true, .return_state = true,
                               .go_backwards = backwards, .zero_output_for_mask = zero_output});
          auto looped = L::RNN({.cell = L::StackedRNNCells({.cells = {cell}}), .return_sequences = true,
                                .return_state = true, .go_backwards = backwards, .zero_output_for_mask = zero_output});
          TensorList inputs{x.clone().set_requires_grad(true)};
          std::vector<std::string> keywords;
          for (size_t s = 0; s < c.states; ++s) {
            inputs.push_back(random::normal({3, 4}, 0.0, 0.5, 20 + s).set_requires_grad(true));
            keywords.push_back("initial_state");
          }
          CallArgs args{.mask = {}, .keywords = keywords};
          if (masked) args.mask = TensorList(inputs.size());
          if (masked) args.mask[0] = lengths_mask();

          auto run = [&](L::RNN& layer) {
            GradientTape tape;
            TensorList out = layer(inputs, args);
            Tensor loss = ops::sum(ops::multiply(out[0], out[0]));
            for (size_t i = 1; i < out.size(); ++i) loss = ops::add(loss, ops::sum(out[i]));
            TensorList sources = inputs;
            for (const auto& w : cell->trainable_weights()) sources.push_back(w.value());
            TensorList grads = tape.gradient(loss, sources);
            out.insert(out.end(), grads.begin(), grads.end());
            return out;
          };
          TensorList a = run(fused), b = run(looped);
          ASSERT_EQ(a.size(), b.size()) << what;
          for (size_t i = 0; i < a.size(); ++i) {
            ASSERT_TRUE(a[i].defined() && b[i].defined()) << what << " entry " << i;
            expect_close(a[i], b[i], what + " entry " + std::to_string(i), 1e-5);
          }
        }
  }
}

TEST(RnnFused, DropoutInTrainingRunsTheStepLoopAndInferenceTheFusedOp) {
  L::LSTMCellImpl cell({.units = 2, .dropout = 0.5});
  cell.ensure_built({{-1, 3}});
  EXPECT_FALSE(cell.fused_sequence(true).has_value());
  ASSERT_TRUE(cell.fused_sequence(false).has_value());
  EXPECT_EQ(cell.fused_sequence(false)->kind, ops::RnnKind::lstm);
  L::LSTMCellImpl plain({.units = 2});
  plain.ensure_built({{-1, 3}});
  EXPECT_TRUE(plain.fused_sequence(true).has_value());
}
