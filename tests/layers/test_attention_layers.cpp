// The attention layers through the layer harness (several inputs, keyword tensors, a second
// output), and their behaviour: padded keys give the unpadded result, the query mask reaches
// the output, causal masking hides the future, dropout only while training.
#include <gtest/gtest.h>

#include "layers/additive_attention.h"
#include "layers/attention.h"
#include "layers/group_query_attention.h"
#include "layers/multi_head_attention.h"
#include "tests/support/layer_harness.h"

using namespace keras;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

namespace {

Tensor bool_mask(const std::vector<float>& values, const Shape& shape) {
  return ops::greater(Tensor::from_vector(values, shape), Tensor::scalar(0.5));
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  EXPECT_EQ(x.size(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) worst = std::max(worst, std::abs(double(x[i]) - y[i]));
  return worst;
}

}  // namespace

TEST(MultiHeadAttentionHarness, CrossAttention) {
  run_layer_harness({
      .name = "MultiHeadAttention cross",
      .make = [] { return LayerPtr(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3})); },
      .weight_shapes = {{6, 2, 3}, {2, 3}, {6, 2, 3}, {2, 3}, {6, 2, 3}, {2, 3}, {2, 3, 6}, {6}},
      .input_shapes = {{2, 4, 6}, {2, 5, 6}},
      .gradcheck_input_shapes = {{1, 2, 3}, {1, 3, 3}},
  });
}

TEST(MultiHeadAttentionHarness, KeyMaskScoresAndOptions) {
  // key and attention_mask by keyword, causal mask, the scores as a second output.
  run_layer_harness({
      .name = "MultiHeadAttention key+mask+scores",
      .make = [] {
        return LayerPtr(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .value_dim = 2, .output_shape = Shape{5}}));
      },
      .weight_shapes = {{6, 2, 3}, {2, 3}, {4, 2, 3}, {2, 3}, {6, 2, 2}, {2, 2}, {2, 2, 5}, {5}},
      .input_shapes = {{2, 4, 6}, {2, 5, 6}, {2, 5, 4}, {2, 4, 5}},
      .gradcheck_input_shapes = {{1, 2, 4}, {1, 3, 3}, {1, 3, 2}, {1, 2, 3}},
      .make_input = [](const Shape& s, uint64_t seed) {
        if (s == Shape{2, 4, 5} || s == Shape{1, 2, 3}) return ops::greater(random::uniform(s, 0.0, 1.0, seed), Tensor::scalar(0.3));
        return random::normal(s, 0.0, 1.0, seed);
      },
      .keywords = {"key", "attention_mask"},
      .options = {{"use_causal_mask", true}, {"return_attention_scores", true}},
  });
}

TEST(MultiHeadAttentionHarness, AttentionAxesGateNoBias) {
  run_layer_harness({
      .name = "MultiHeadAttention attention_axes (2,), use_gate, no bias",
      .make = [] {
        return LayerPtr(L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .use_bias = false,
                                               .attention_axes = std::vector<int64_t>{2}, .use_gate = true}));
      },
      .weight_shapes = {{5, 2, 2}, {5, 2, 2}, {5, 2, 2}, {5, 2, 2}, {2, 2, 5}},
      .input_shapes = {{2, 3, 4, 5}, {2, 3, 4, 5}},
      .gradcheck_input_shapes = {{1, 2, 2, 3}, {1, 2, 3, 3}},
      .options = {{"return_attention_scores", true}},
  });
}

TEST(GroupQueryAttentionHarness, SharedKeyValueHeads) {
  run_layer_harness({
      .name = "GroupQueryAttention",
      .make = [] {
        return LayerPtr(L::GroupQueryAttention({.head_dim = 3, .num_query_heads = 4, .num_key_value_heads = 2}));
      },
      .weight_shapes = {{6, 4, 3}, {4, 3}, {6, 2, 3}, {2, 3}, {6, 2, 3}, {2, 3}, {4, 3, 6}, {6}},
      .input_shapes = {{2, 4, 6}, {2, 5, 6}},
      .gradcheck_input_shapes = {{1, 2, 3}, {1, 3, 3}},
      .options = {{"use_causal_mask", true}, {"return_attention_scores", true}},
  });
}

TEST(AttentionHarness, DotConcatAndAdditive) {
  run_layer_harness({
      .name = "Attention dot",
      .make = [] { return LayerPtr(L::Attention()); },
      .weight_shapes = {},
      .input_shapes = {{2, 4, 6}, {2, 5, 6}},
      .gradcheck_input_shapes = {{1, 2, 3}, {1, 3, 3}},
      .options = {{"return_attention_scores", true}},
  });
  run_layer_harness({
      .name = "Attention concat scaled, key",
      .make = [] { return LayerPtr(L::Attention({.use_scale = true, .score_mode = "concat"})); },
      .weight_shapes = {{}, {}},
      .input_shapes = {{2, 4, 6}, {2, 5, 3}, {2, 5, 6}},
      .gradcheck_input_shapes = {{1, 2, 3}, {1, 3, 2}, {1, 3, 3}},
      .options = {{"use_causal_mask", true}},
  });
  run_layer_harness({
      .name = "AdditiveAttention",
      .make = [] { return LayerPtr(L::AdditiveAttention()); },
      .weight_shapes = {{6}},
      .input_shapes = {{2, 4, 6}, {2, 5, 6}},
      .gradcheck_input_shapes = {{1, 2, 3}, {1, 3, 3}},
  });
}

// Keras's promise for masks: padding the keys (and masking the padding) changes nothing.
TEST(AttentionMasks, PaddedKeysGiveTheUnpaddedResult) {
  Tensor q = random::normal({1, 3, 4}, 0.0, 1.0, uint64_t{1});
  Tensor v = random::normal({1, 5, 4}, 0.0, 1.0, uint64_t{2});
  Tensor v_short = ops::slice(v, {0, 0, 0}, {1, 3, 4});
  Tensor v_mask = bool_mask({1, 1, 1, 0, 0}, {1, 5});
  std::vector<std::pair<std::string, LayerPtr>> layers = {
      {"MultiHeadAttention", L::MultiHeadAttention({.num_heads = 2, .key_dim = 3})},
      {"MultiHeadAttention (scores path)", L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .dropout = 0.5})},
      {"GroupQueryAttention", L::GroupQueryAttention({.head_dim = 2, .num_query_heads = 2, .num_key_value_heads = 1})},
      {"Attention", L::Attention({.use_scale = true})},
      {"AdditiveAttention", L::AdditiveAttention()},
  };
  for (auto& [name, layer] : layers) {
    SCOPED_TRACE(name);
    Tensor full = (*layer)(TensorList{q, v}, {.training = false, .mask = {Tensor(), v_mask}})[0];
    Tensor unpadded = (*layer)(TensorList{q, v_short}, {.training = false})[0];
    EXPECT_LT(max_abs_diff(full, unpadded), 1e-6);
    // Without the mask the padding does matter (the check above can fail).
    Tensor unmasked = (*layer)(TensorList{q, v}, {.training = false})[0];
    EXPECT_GT(max_abs_diff(unmasked, unpadded), 1e-3);
  }
}

TEST(AttentionMasks, QueryMaskReachesTheOutput) {
  Tensor q = random::normal({2, 3, 4}, 0.0, 1.0, uint64_t{3});
  Tensor v = random::normal({2, 5, 4}, 0.0, 1.0, uint64_t{4});
  Tensor q_mask = bool_mask({1, 1, 0, 1, 0, 0}, {2, 3});
  q.set_keras_mask(q_mask);
  for (LayerPtr layer : {LayerPtr(L::MultiHeadAttention({.num_heads = 2, .key_dim = 2})), LayerPtr(L::Attention()),
                         LayerPtr(L::GroupQueryAttention({.head_dim = 2, .num_query_heads = 2, .num_key_value_heads = 2}))}) {
    SCOPED_TRACE(layer->class_name());
    Tensor out = (*layer)(TensorList{q, v})[0];
    ASSERT_TRUE(out.keras_mask().defined());
    EXPECT_EQ(ops::cast(out.keras_mask(), DType::float32).to_vector<float>(), ops::cast(q_mask, DType::float32).to_vector<float>());
  }
  // Attention zeroes masked query rows.
  Tensor out = (*L::Attention())(TensorList{q, v})[0];
  std::vector<float> o = out.to_vector<float>();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(o[static_cast<size_t>(2 * 4 + j)], 0.0f);
}

TEST(AttentionMasks, CausalMaskHidesTheFuture) {
  Tensor x = random::normal({1, 4, 6}, 0.0, 1.0, uint64_t{5});
  Tensor changed = ops::concatenate({ops::slice(x, {0, 0, 0}, {1, 3, 6}), random::normal({1, 1, 6}, 0.0, 1.0, uint64_t{6})}, 1);
  CallArgs causal{.training = false};
  causal.options = {{"use_causal_mask", true}};
  auto mha = L::MultiHeadAttention({.num_heads = 2, .key_dim = 3});
  Tensor a = mha(TensorList{x, x}, causal)[0], b = mha(TensorList{changed, changed}, causal)[0];
  EXPECT_LT(max_abs_diff(ops::slice(a, {0, 0, 0}, {1, 3, 6}), ops::slice(b, {0, 0, 0}, {1, 3, 6})), 1e-7);
  EXPECT_GT(max_abs_diff(ops::slice(a, {0, 3, 0}, {1, 1, 6}), ops::slice(b, {0, 3, 0}, {1, 1, 6})), 1e-4);
  // The typed call gives the same, and the scores are lower triangular.
  auto r = mha->attend(x, x, {}, {}, true, true, false);
  EXPECT_LT(max_abs_diff(r.output, a), 1e-7);
  std::vector<float> s = r.scores.to_vector<float>();
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int j = i + 1; j < 4; ++j) EXPECT_EQ(s[static_cast<size_t>((h * 4 + i) * 4 + j)], 0.0f);
}

TEST(AttentionDropout, OnlyWhileTrainingAndSeeded) {
  Tensor q = random::normal({2, 4, 6}, 0.0, 1.0, uint64_t{7});
  auto a = L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .dropout = 0.5, .seed = 3});
  auto b = L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .dropout = 0.5, .seed = 3});
  Tensor inference = a(TensorList{q, q}, {.training = false})[0];
  b(TensorList{q, q}, {.training = false});
  b->set_weights(a->get_weights());
  EXPECT_EQ(max_abs_diff(b(TensorList{q, q}, {.training = false})[0], inference), 0.0);
  Tensor ta = a(TensorList{q, q}, {.training = true})[0], tb = b(TensorList{q, q}, {.training = true})[0];
  EXPECT_GT(max_abs_diff(ta, inference), 1e-3);
  EXPECT_EQ(max_abs_diff(ta, tb), 0.0);  // same seed, same drops
  auto att = L::Attention({.dropout = 0.5, .seed = 1});
  EXPECT_GT(max_abs_diff(att(TensorList{q, q}, {.training = true})[0], att(TensorList{q, q}, {.training = false})[0]), 1e-3);
}

TEST(AttentionErrors, OptionsAndShapes) {
  EXPECT_THROW(L::MultiHeadAttention({.num_heads = 0, .key_dim = 2}), ValueError);
  EXPECT_THROW(L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .dropout = 1.0}), ValueError);
  EXPECT_THROW(L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .activity_regularizer = "l2"}), NotImplementedError);
  EXPECT_THROW(L::GroupQueryAttention({.head_dim = 2, .num_query_heads = 3, .num_key_value_heads = 2}), ValueError);
  EXPECT_THROW(L::Attention({.score_mode = "add"}), ValueError);
  auto mha = L::MultiHeadAttention({.num_heads = 2, .key_dim = 2});
  EXPECT_THROW(mha(TensorList{Tensor::ones({1, 3, 4})}), ValueError);  // no value
  EXPECT_THROW(mha(TensorList{Tensor::ones({1, 3, 4}), Tensor::ones({1, 3})}), ShapeError);
  auto axes = L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .attention_axes = std::vector<int64_t>{3}});
  EXPECT_THROW(axes(TensorList{Tensor::ones({1, 3, 4}), Tensor::ones({1, 3, 4})}), ValueError);
  CallArgs bad;
  bad.keywords = {"values"};
  EXPECT_THROW(mha(TensorList{Tensor::ones({1, 3, 4}), Tensor::ones({1, 3, 4})}, bad), ValueError);
}
