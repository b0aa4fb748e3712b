// attention_heads (backend/ops_attention.h): the fused op against dot_product_attention on the
// (B, H, T, D) transposes it replaces, in float32 and float64; float64 central-difference
// gradients through both outputs; float32 gradients against float64 ones; the gradient without
// the probabilities' gradient; shape errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/op_profile.h"
#include "backend/op_registry.h"
#include "backend/ops_attention.h"
#include "backend/ops_attention_heads.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;

namespace {

// (B, T, H, D) -> (B, H, T, D) and back: the gathering the composition does.
Tensor heads_first(const Tensor& x) { return ops::transpose(x, {0, 2, 1, 3}); }

std::vector<double> as_doubles(const Tensor& t) { return ops::cast(t, DType::float64).to_vector<double>(); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = as_doubles(a), y = as_doubles(b);
  EXPECT_EQ(x.size(), y.size());
  double d = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

struct Inputs {
  Tensor q, k, v;
};

// Tq != Tk and D != Dv, so a swapped extent cannot pass.
Inputs inputs(DType dtype, uint64_t seed) {
  return {random::normal({2, 5, 3, 4}, 0.0, 1.0, seed, dtype), random::normal({2, 7, 3, 4}, 0.0, 1.0, seed + 1, dtype),
          random::normal({2, 7, 3, 6}, 0.0, 1.0, seed + 2, dtype)};
}

}  // namespace

TEST(AttentionHeads, MatchesDotProductAttentionOnTransposes) {
  for (DType dtype : {DType::float32, DType::float64}) {
    Inputs in = inputs(dtype, 11);
    auto got = ops::attention_heads(in.q, in.k, in.v, 0.5);
    auto want = ops::dot_product_attention(heads_first(in.q), heads_first(in.k), heads_first(in.v), {.scale = 0.5});
    EXPECT_EQ(shape_str(got.output.shape()), "(2, 5, 3, 6)");
    EXPECT_EQ(shape_str(got.scores.shape()), "(2, 3, 5, 7)");
    const double tol = dtype == DType::float32 ? 2e-6 : 1e-14;
    EXPECT_LT(max_abs_diff(got.output, heads_first(want.output)), tol) << dtype_name(dtype);
    EXPECT_LT(max_abs_diff(got.scores, want.scores), tol) << dtype_name(dtype);
  }
}

TEST(AttentionHeads, GradientsMatchCentralDifferencesInFloat64) {
  Inputs in = inputs(DType::float64, 21);
  // Both outputs feed the checked value, so the probabilities' own gradient is covered too.
  Tensor w = random::normal({2, 3, 5, 7}, 0.0, 1.0, uint64_t{24}, DType::float64);
  keras::testing::check_gradients("attention_heads", [&](const TensorList& x) {
    auto r = ops::attention_heads(x[0], x[1], x[2], 0.7);
    return ops::add(ops::sum(ops::multiply(r.scores, w)), ops::sum(ops::square(r.output)));
  }, {in.q, in.k, in.v});
  keras::testing::check_gradients("attention_heads output", [&](const TensorList& x) {
    return ops::attention_heads(x[0], x[1], x[2], 0.7).output;
  }, {in.q, in.k, in.v});
}

TEST(AttentionHeads, Float32GradientsMatchFloat64) {
  Inputs in = inputs(DType::float64, 31);
  Tensor seed = random::normal({2, 5, 3, 6}, 0.0, 1.0, uint64_t{34}, DType::float64);
  auto grads = [&](DType dtype) {
    TensorList x{ops::cast(in.q, dtype), ops::cast(in.k, dtype), ops::cast(in.v, dtype)};
    for (auto& t : x) t.set_requires_grad(true);
    GradientTape tape;
    Tensor y = ops::attention_heads(x[0], x[1], x[2], 0.5).output;
    return compute_gradients(y, x, ops::cast(seed, dtype));
  };
  TensorList g32 = grads(DType::float32), g64 = grads(DType::float64);
  for (size_t i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(g32[i], g64[i]), 1e-5) << "input " << i;
}

TEST(AttentionHeads, ShapeErrorsAndSupport) {
  Inputs in = inputs(DType::float32, 41);
  EXPECT_THROW(ops::attention_heads(in.q, in.v, in.v, 1.0), ShapeError);  // key features differ from query's
  EXPECT_THROW(ops::attention_heads(in.q, in.k, in.q, 1.0), ShapeError);  // value time differs from key's
  EXPECT_THROW(ops::attention_heads(ops::reshape(in.q, {10, 3, 4}), in.k, in.v, 1.0), ShapeError);
  EXPECT_TRUE(ops::attention_heads_supported(in.q, in.k, in.v));
  EXPECT_FALSE(ops::attention_heads_supported(in.q, in.v, in.v));
  EXPECT_FALSE(ops::attention_heads_supported(in.q, ops::cast(in.k, DType::float64), in.v));
}

// When only the output gets a gradient, the gradient op runs without dprobs (shape (0): no fill,
// no pass over zeros); its results are those of explicit zeros, bit for bit.
TEST(AttentionHeads, MissingProbabilityGradientEqualsZeros) {
  for (DType dtype : {DType::float32, DType::float64}) {
    Inputs in = inputs(dtype, 41);
    for (Tensor* t : {&in.q, &in.k, &in.v}) t->set_requires_grad(true);
    Tensor dout = random::normal({2, 5, 3, 6}, 0.0, 1.0, uint64_t{44}, dtype);
    TensorList via_tape;
    Tensor probs;
    {
      GradientTape tape;
      auto r = ops::attention_heads(in.q, in.k, in.v, 0.5);
      probs = r.scores;
      reset_op_profile();
      set_op_profiling(true);
      via_tape = compute_gradients(r.output, {in.q, in.k, in.v}, dout);
      set_op_profiling(false);
    }
    for (const OpProfileEntry& e : op_profile())  // the backward pass made no zero probabilities
      EXPECT_FALSE(e.op == "fill" && e.shape == shape_str(probs.shape())) << e.op << " " << e.shape;
    EXPECT_FALSE(op_profile().empty());
    const Attrs scale{{"scale", 0.5}};
    TensorList with_zeros = run_op("attention_heads_grad",
                                   {dout, Tensor::zeros(probs.shape(), dtype), in.q, in.k, in.v, probs}, scale);
    TensorList with_none =
        run_op("attention_heads_grad", {dout, Tensor::zeros({0}, dtype), in.q, in.k, in.v, probs}, scale);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(max_abs_diff(via_tape[i], with_zeros[i]), 0.0) << dtype_name(dtype) << " input " << i;
      EXPECT_EQ(max_abs_diff(with_none[i], with_zeros[i]), 0.0) << dtype_name(dtype) << " input " << i;
      EXPECT_GT(max_abs_diff(with_zeros[i], Tensor::zeros(with_zeros[i].shape(), dtype)), 1e-3);
    }
    EXPECT_THROW(run_op("attention_heads_grad", {dout, Tensor::zeros({1}, dtype), in.q, in.k, in.v, probs}, scale),
                 ShapeError);
  }
}
