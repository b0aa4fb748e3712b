// attention_heads_packed (backend/ops_attention_heads.h): self-attention from one packed
// (B, T, 3, H, D) projection against attention_heads on the three slices, bit for bit, forward
// and backward; float64 central-difference gradients; shape errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/op_registry.h"
#include "backend/ops_attention_heads.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"
#include "tests/support/tensor_compare.h"

using namespace keras;
using keras::testing::max_abs_difference;

namespace {

// q, k, v (B, T, H, D) and their packed form (B, T, 3, H, D).
struct Parts {
  Tensor q, k, v, qkv;
};

Parts parts(DType dtype, uint64_t seed) {
  Parts p;
  p.q = random::normal({2, 5, 3, 4}, 0.0, 1.0, seed, dtype);
  p.k = random::normal({2, 5, 3, 4}, 0.0, 1.0, seed + 1, dtype);
  p.v = random::normal({2, 5, 3, 4}, 0.0, 1.0, seed + 2, dtype);
  p.qkv = ops::concatenate({ops::expand_dims(p.q, 2), ops::expand_dims(p.k, 2), ops::expand_dims(p.v, 2)}, 2);
  return p;
}

}  // namespace

TEST(AttentionHeadsPacked, EqualsAttentionHeadsOnTheSlicesBitForBit) {
  for (DType dtype : {DType::float32, DType::float64}) {
    Parts p = parts(dtype, 51);
    auto got = ops::attention_heads_packed(p.qkv, 0.6);
    auto want = ops::attention_heads(p.q, p.k, p.v, 0.6);
    EXPECT_EQ(shape_str(got.output.shape()), "(2, 5, 3, 4)");
    EXPECT_EQ(shape_str(got.scores.shape()), "(2, 3, 5, 5)");
    EXPECT_EQ(max_abs_difference(got.output, want.output), 0.0) << dtype_name(dtype);
    EXPECT_EQ(max_abs_difference(got.scores, want.scores), 0.0) << dtype_name(dtype);

    // The gradient: dqkv holds dq, dk and dv in the packed layout, with and without dprobs.
    Tensor dout = random::normal({2, 5, 3, 4}, 0.0, 1.0, uint64_t{54}, dtype);
    Tensor dprobs = random::normal({2, 3, 5, 5}, 0.0, 1.0, uint64_t{55}, dtype);
    const Attrs scale{{"scale", 0.6}};
    for (const Tensor& dp : {dprobs, Tensor::zeros({0}, dtype)}) {
      TensorList sep = run_op("attention_heads_grad", {dout, dp, p.q, p.k, p.v, want.scores}, scale);
      TensorList packed = run_op("attention_heads_packed_grad", {dout, dp, p.qkv, got.scores}, scale);
      ASSERT_EQ(packed.size(), 1u);
      Tensor stacked =
          ops::concatenate({ops::expand_dims(sep[0], 2), ops::expand_dims(sep[1], 2), ops::expand_dims(sep[2], 2)}, 2);
      EXPECT_EQ(max_abs_difference(packed[0], stacked), 0.0) << dtype_name(dtype) << " dprobs " << shape_str(dp.shape());
      EXPECT_GT(max_abs_difference(packed[0], Tensor::zeros(stacked.shape(), dtype)), 1e-3);
    }
  }
}

TEST(AttentionHeadsPacked, GradientsMatchCentralDifferencesInFloat64) {
  Parts p = parts(DType::float64, 61);
  Tensor w = random::normal({2, 3, 5, 5}, 0.0, 1.0, uint64_t{64}, DType::float64);
  keras::testing::check_gradients("attention_heads_packed", [&](const TensorList& x) {
    auto r = ops::attention_heads_packed(x[0], 0.7);
    return ops::add(ops::sum(ops::multiply(r.scores, w)), ops::sum(ops::square(r.output)));
  }, {p.qkv});
  keras::testing::check_gradients("attention_heads_packed output", [&](const TensorList& x) {
    return ops::attention_heads_packed(x[0], 0.7).output;
  }, {p.qkv});
}

TEST(AttentionHeadsPacked, ShapeErrorsAndSupport) {
  Parts p = parts(DType::float32, 71);
  EXPECT_THROW(ops::attention_heads_packed(p.q, 1.0), ShapeError);  // rank 4: not packed
  Tensor two = ops::concatenate({ops::expand_dims(p.q, 2), ops::expand_dims(p.k, 2)}, 2);
  EXPECT_THROW(ops::attention_heads_packed(two, 1.0), ShapeError);  // (B, T, 2, H, D)
  EXPECT_TRUE(ops::attention_heads_packed_supported(p.qkv));
  EXPECT_FALSE(ops::attention_heads_packed_supported(two));
  EXPECT_FALSE(ops::attention_heads_packed_supported(ops::cast(p.qkv, DType::bfloat16)));
  auto r = ops::attention_heads_packed(p.qkv, 1.0);
  EXPECT_THROW(run_op("attention_heads_packed_grad", {r.output, Tensor::zeros({1}), p.qkv, r.scores},
                      Attrs{{"scale", 1.0}}),
               ShapeError);
}
