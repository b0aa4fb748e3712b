// Recurrent models train through fit: gradients flow from the loss through the per-step loop of
// LSTM, Bidirectional(GRU) and TimeDistributed into every weight (the tape, no fused kernel).
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "backend/random.h"
#include "keras/models/model.h"
#include "layers/bidirectional.h"
#include "layers/dense.h"
#include "layers/gru.h"
#include "layers/input_layer.h"
#include "layers/lstm.h"
#include "layers/time_distributed.h"
#include "optimizers/adam.h"

using namespace keras;
namespace L = keras::layers;

TEST(RNNTraining, FitLearnsTheRunningSumOfASequence) {
  set_random_seed(3);
  // Target: at every step, the sum of the inputs so far (needs the recurrent state).
  Tensor x = random::uniform({128, 6, 1}, -0.5, 0.5, 21);
  std::vector<float> xs = x.to_vector<float>(), ys(xs.size());
  for (size_t b = 0; b < 128; ++b) {
    float s = 0;
    for (size_t t = 0; t < 6; ++t) ys[b * 6 + t] = (s += xs[b * 6 + t]);
  }
  Tensor y = Tensor::from_vector(ys, {128, 6, 1});
  auto in = L::Input({6, 1});
  auto h = L::LSTM({.units = 8, .return_sequences = true})(in);
  h = L::Bidirectional({.layer = L::GRU({.units = 4, .return_sequences = true}), .merge_mode = "concat"})(h);
  auto out = L::TimeDistributed({.layer = L::Dense({.units = 1})})(h);
  Model model(in, out);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}), .loss = "mse"});
  const TensorList before = model.get_weights();
  History history = model.fit(x, y, {.batch_size = 32, .epochs = 25, .verbose = 0});
  const auto& loss = history["loss"];
  EXPECT_LT(loss.back(), 0.2 * loss.front()) << "first " << loss.front() << ", last " << loss.back();
  const TensorList after = model.get_weights();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i)
    EXPECT_GT(ops::max(ops::abs(ops::subtract(after[i], before[i]))).item(), 0.0) << model.weights()[i].path();
}
