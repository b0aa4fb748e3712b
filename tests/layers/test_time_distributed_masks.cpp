// Masks through TimeDistributed (each timestep's mask reaches an inner layer whose call takes a
// mask, as Keras's step_function passes mask[i]) and through a layer that does not support
// masking but returns its input unchanged (Keras destroys the mask; it must not ride along on the
// shared tensor).
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "layers/embedding.h"
#include "layers/global_average_pooling1d.h"
#include "layers/identity.h"
#include "layers/lstm.h"
#include "layers/time_distributed.h"
#include "support/rnn_reference.h"

using namespace keras;
using keras::testing::expect_close;
namespace L = keras::layers;

namespace {

// Returns its input as is, without supporting masking.
class PassThrough : public Layer {
 public:
  std::string class_name() const override { return "TestPassThrough"; }
  TensorList call(const TensorList& in, const CallContext&) override { return {in[0]}; }
};

// (2 sentences, 3 words, 4 characters) ids with padding zeros, one word all padding.
Tensor ids() {
  return Tensor::from_vector(std::vector<int64_t>{1, 2, 0, 0, 3, 3, 3, 3, 0, 0, 0, 0,  //
                                                  4, 0, 0, 0, 5, 1, 2, 0, 2, 0, 0, 0},
                             {2, 3, 4});
}

}  // namespace

// TimeDistributed(GlobalAveragePooling1D) over embedded characters averages each word's real
// characters only: the (batch, time, chars) mask reaches the pooling as (batch * time, chars).
TEST(TimeDistributedMasks, InnerLayerGetsEachTimestepsMask) {
  auto embed = L::Embedding({.input_dim = 6, .output_dim = 2, .mask_zero = true});
  auto words = L::TimeDistributed({.layer = L::GlobalAveragePooling1D()});
  Tensor chars = embed(ids());
  ASSERT_TRUE(chars.keras_mask().defined());
  Tensor pooled = words(chars);
  ASSERT_EQ(pooled.shape(), (Shape{2, 3, 2}));
  const auto e = chars.contiguous().to_vector<float>();
  const auto id = ids().to_vector<int64_t>();
  std::vector<float> want;
  for (int64_t w = 0; w < 6; ++w) {  // (sentence, word) pairs
    float sum[2] = {0, 0};
    int n = 0;
    for (int64_t c = 0; c < 4; ++c) {
      if (id[w * 4 + c] == 0) continue;
      ++n;
      for (int k = 0; k < 2; ++k) sum[k] += e[(w * 4 + c) * 2 + k];
    }
    for (int k = 0; k < 2; ++k) want.push_back(n ? sum[k] / n : 0.0f);  // Keras: 0 / max(count, 1)
  }
  expect_close(pooled, Tensor::from_vector(want, {2, 3, 2}), "per-word masked average");
}

// TimeDistributed(LSTM) over the same words: each word's LSTM skips its padding characters, so a
// word padded at the end gives the LSTM of its real characters alone.
TEST(TimeDistributedMasks, InnerRNNSkipsPaddedSteps) {
  auto embed = L::Embedding({.input_dim = 6, .output_dim = 2, .mask_zero = true});
  auto lstm = L::LSTM({.units = 3});
  auto words = L::TimeDistributed({.layer = lstm});
  Tensor chars = embed(ids());
  Tensor encoded = words(chars);  // (2, 3, 3)
  // Word (0, 0) has 2 real characters: the LSTM on those two alone.
  Tensor first_word = ops::slice(chars, {0, 0, 0, 0}, {1, 1, 2, 2}).view({1, 2, 2});
  Tensor want = lstm(first_word);
  expect_close(ops::slice(encoded, {0, 0, 0}, {1, 1, 3}).view({1, 3}), want, "word (0, 0)");
}

// A layer that does not support masking returns its input unchanged: its output carries no mask
// (Keras destroys it), the input keeps its own, and gradients still reach the input.
TEST(TimeDistributedMasks, NonMaskingLayerReturningItsInputDropsTheMask) {
  Tensor chars = L::Embedding({.input_dim = 6, .output_dim = 2, .mask_zero = true})(ids());
  ASSERT_TRUE(chars.keras_mask().defined());
  auto pass = std::make_shared<PassThrough>();
  Tensor out = (*pass)(chars);
  EXPECT_FALSE(out.keras_mask().defined());
  EXPECT_TRUE(chars.keras_mask().defined());
  EXPECT_TRUE(L::Identity()(chars).keras_mask().defined()) << "Identity supports masking: the mask passes on";

  Tensor x = Tensor::ones({2, 3});
  x.set_keras_mask(ops::greater(x, Tensor::zeros({2, 3})));
  x.set_requires_grad(true);
  GradientTape tape;
  Tensor y = (*pass)(x);
  EXPECT_FALSE(y.keras_mask().defined());
  TensorList g = compute_gradients(ops::sum(ops::multiply(y, 3.0)), {x});
  ASSERT_TRUE(g[0].defined());
  EXPECT_EQ(g[0].to_vector<float>(), std::vector<float>(6, 3.0f));
}
