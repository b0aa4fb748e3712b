// MultiHeadAttention's packed self-attention path (multi_head_attention.h): called with one
// tensor as query and value, the layer projects q, k and v in one GEMM; it must give what the
// separate projections give (a distinct tensor with the same values takes that path), in the
// outputs and in every gradient, and stay off where masks, dropout, returned scores or unequal
// key and value sizes need the general path.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/op_profile.h"
#include "backend/random.h"
#include "layers/multi_head_attention.h"
#include "tests/support/gradcheck.h"
#include "tests/support/tensor_compare.h"
#include "tests/support/layer_harness.h"

using namespace keras;
using keras::testing::max_abs_difference;
namespace L = keras::layers;

namespace {

// Runs `f` with the op profile on; true when attention_heads_packed ran.
template <class F>
bool runs_packed(F&& f) {
  reset_op_profile();
  set_op_profiling(true);
  f();
  set_op_profiling(false);
  for (const OpProfileEntry& e : op_profile())
    if (e.op == "attention_heads_packed") return true;
  return false;
}

}  // namespace

TEST(MultiHeadAttentionPacked, SelfAttentionEqualsSeparateProjectionsWithGradients) {
  const std::vector<L::MultiHeadAttentionOptions> cases = {
      {.num_heads = 2, .key_dim = 3},
      {.num_heads = 3, .key_dim = 2, .use_bias = false, .output_shape = Shape{4}},
      {.num_heads = 2, .key_dim = 4, .use_gate = true},
  };
  for (const auto& options : cases) {
    auto layer = L::MultiHeadAttention(options);
    Tensor x = random::normal({2, 5, 6}, 0.0, 1.0, 81);
    layer(TensorList{x, x});
    const auto weights = layer->trainable_weights();
    Tensor dy = random::normal(layer(TensorList{x, x})[0].shape(), 0.0, 1.0, 82);
    // Output and the gradients of x and of every weight, through `value_of(x)` as the value.
    auto run = [&](bool same) {
      TensorList in{x.detach()};
      for (const auto& w : weights) in.push_back(w.value().detach());
      for (Tensor& t : in) t.set_requires_grad(true);
      keras::testing::harness_detail::ScopedRebind rebind(weights, in, 1);
      GradientTape tape;
      Tensor value = same ? in[0] : ops::add(in[0], Tensor::scalar(0.0));
      Tensor y = layer->call(TensorList{in[0], value}, CallContext{})[0];
      TensorList out{y};
      for (const Tensor& g : compute_gradients(y, in, dy)) out.push_back(g);
      return out;
    };
    TensorList packed, separate;
    EXPECT_TRUE(runs_packed([&] { packed = run(true); }));
    EXPECT_FALSE(runs_packed([&] { separate = run(false); }));
    ASSERT_EQ(packed.size(), separate.size());
    for (size_t i = 0; i < packed.size(); ++i) {
      EXPECT_LT(max_abs_difference(packed[i], separate[i]), 2e-5) << "output/gradient " << i;
      // The key bias adds q . b to a query's scores for every key alike: the softmax ignores it.
      const bool key_bias = i >= 2 && weights[i - 2].path().find("key/bias") != std::string::npos;
      if (!key_bias) EXPECT_GT(max_abs_difference(packed[i], Tensor::zeros(packed[i].shape())), 1e-3) << "output/gradient " << i;
    }
  }
}

TEST(MultiHeadAttentionPacked, Float64GradientsMatchCentralDifferences) {
  auto layer = L::MultiHeadAttention({.num_heads = 2, .key_dim = 2});
  Tensor x32 = random::normal({1, 3, 4}, 0.0, 1.0, 91);
  layer(TensorList{x32, x32});
  const auto weights = layer->trainable_weights();
  TensorList inputs{x32.astype(DType::float64)};
  for (const auto& w : weights) inputs.push_back(w.value().detach().astype(DType::float64));
  bool packed = false;
  EXPECT_TRUE(keras::testing::check_gradients("MultiHeadAttention packed float64", [&](const TensorList& in) {
    keras::testing::harness_detail::ScopedRebind rebind(weights, in, 1);
    TensorList y;
    packed = runs_packed([&] { y = layer->call(TensorList{in[0], in[0]}, CallContext{}); }) || packed;
    return y[0];
  }, inputs));
  EXPECT_TRUE(packed);
}

TEST(MultiHeadAttentionPacked, GeneralPathWhereThePackedOneDoesNotApply) {
  Tensor x = random::normal({2, 4, 6}, 0.0, 1.0, 101);
  auto mha = L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .dropout = 0.5});
  EXPECT_TRUE(runs_packed([&] { mha(TensorList{x, x}); }));  // inference: no dropout
  EXPECT_FALSE(runs_packed([&] { mha(TensorList{x, x}, CallArgs{.training = true}); }));
  EXPECT_FALSE(runs_packed([&] { mha(TensorList{x, x}, CallArgs{.options = {{"use_causal_mask", true}}}); }));
  EXPECT_FALSE(
      runs_packed([&] { mha(TensorList{x, x}, CallArgs{.options = {{"return_attention_scores", true}}}); }));
  auto unequal = L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .value_dim = 2});
  EXPECT_FALSE(runs_packed([&] { unequal(TensorList{x, x}); }));
  Tensor other = random::normal({2, 4, 6}, 0.0, 1.0, 102);
  EXPECT_FALSE(runs_packed([&] { mha(TensorList{x, other}); }));  // cross-attention
}
