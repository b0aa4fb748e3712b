// ops::conv2d_add (backend/ops_conv_add.h), the inference fold of Conv -> BN -> Add -> ReLU:
// every CPU candidate (the direct kernel then one pass, oneDNN with the residual as a post-op,
// Winograd where oneDNN offers it) against the plain-loop reference conv2d plus the residual
// and the activation; bfloat16 rounded once; float64 through the loops; bad inputs named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/bf16_compute.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/reference_conv.h"
#include "backend/instrumentation.h"
#include "backend/ops.h"
#include "backend/ops_conv_add.h"
#include "backend/random.h"
#include "support/expect_error.h"
#include "tests/support/tensor_compare.h"

using namespace keras;
using cpu::ConvCandidate;
using keras::testing::relative_error;

namespace {

struct Case {
  std::string name;
  Shape x, kernel;
  ops::Conv2DArgs args;
  bool bias = true;
};

std::vector<Case> cases() {
  return {
      {"ResNet 3x3 16 -> 16 same relu", {2, 12, 12, 16}, {3, 3, 16, 16}, {.padding = "same", .activation = "relu"}},
      {"3x3 32 -> 64 valid relu6, no bias", {2, 10, 11, 32}, {3, 3, 32, 64}, {.activation = "relu6"}, false},
      {"1x1 stride 2 16 -> 32 linear", {2, 9, 9, 16}, {1, 1, 16, 32}, {.strides = {2, 2}, .activation = "linear"}},
      {"3x3 3 -> 8 grouped-free first layer", {2, 10, 10, 3}, {3, 3, 3, 8}, {.padding = "same", .activation = "relu"}},
  };
}

ConvParams params_of(const Case& c) {
  ConvParams p;
  p.stride_h = c.args.strides[0], p.stride_w = c.args.strides[1];
  std::tie(p.pad_top, p.pad_bottom) = ops::conv_pads(c.x[1], c.kernel[0], c.args.padding, p.stride_h, 1);
  std::tie(p.pad_left, p.pad_right) = ops::conv_pads(c.x[2], c.kernel[1], c.args.padding, p.stride_w, 1);
  return p;
}

// act(conv + bias + residual) from the float64 plain loops, as float32.
Tensor reference(const Case& c, const Tensor& x, const Tensor& k, const Tensor& b, const Tensor& r) {
  auto f64 = [](const Tensor& t) { return t.defined() ? t.astype(DType::float64) : t; };
  Tensor y = ops::add(cpu::reference_conv2d(f64(x), f64(k), f64(b), params_of(c)), f64(r));
  if (c.args.activation == "relu") y = ops::relu(y);
  if (c.args.activation == "relu6") y = ops::minimum(ops::relu(y), Tensor::scalar(6.0, DType::float64));
  return y.astype(DType::float32);
}

struct Inputs {
  Tensor x, k, b, r;
};

Inputs inputs_of(const Case& c, uint64_t seed) {
  Inputs in{random::normal(c.x, 0, 1, seed), random::normal(c.kernel, 0, 0.5, seed + 1),
            c.bias ? random::normal({c.kernel[3]}, 0, 1, seed + 2) : Tensor(), Tensor()};
  Shape ys = cpu::reference_conv2d(in.x, in.k, Tensor(), params_of(c)).shape();
  in.r = random::normal(ys, 0, 3, seed + 3);
  return in;
}

}  // namespace

TEST(Conv2DAdd, EveryCandidateMatchesTheReference) {
  uint64_t seed = 10;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    Inputs in = inputs_of(c, seed += 10);
    const Tensor ref = reference(c, in.x, in.k, in.b, in.r);
    cpu::reset_conv_choices();
    Tensor chosen = ops::conv2d_add(in.x, in.k, in.b, in.r, c.args);
    EXPECT_LT(relative_error(chosen, ref), cpu::kWinogradTolerance);
    std::vector<ConvCandidate> candidates;
    for (const auto& ch : cpu::conv_choices())
      if (ch.key.rfind("forward_add|", 0) == 0) candidates = ch.candidates;
    ASSERT_FALSE(candidates.empty()) << "conv2d_add did not go through the chooser";
    EXPECT_NE(std::find(candidates.begin(), candidates.end(), ConvCandidate::onednn_direct), candidates.end());
    for (auto cand : candidates) {
      SCOPED_TRACE(cpu::conv_candidate_name(cand));
      cpu::force_conv_candidate(cand);
      Tensor got = ops::conv2d_add(in.x, in.k, in.b, in.r, c.args);
      cpu::force_conv_candidate(std::nullopt);
      EXPECT_LT(relative_error(got, ref), cand == ConvCandidate::onednn_winograd ? cpu::kWinogradTolerance : 1e-5);
    }
    if (c.args.activation == "relu6") EXPECT_EQ(element_as_double(ops::max(ref), 0), 6.0) << "the clip is not reached";
  }
  cpu::reset_conv_choices();
}

// check-numerics splits the activation off (oneDNN's relu post-op maps NaN to 0, as conv2d's
// does): then a NaN in the residual reaches the output whichever candidate runs.
TEST(Conv2DAdd, NaNSurvivesUnderCheckNumerics) {
  const Case c = cases()[0];
  Inputs in = inputs_of(c, 90);
  std::vector<float> r = in.r.to_vector<float>();
  r[5] = std::numeric_limits<float>::quiet_NaN();
  const Tensor residual = Tensor::from_vector(r, in.r.shape());
  instrumentation::set_split_fused_activations(true);
  cpu::reset_conv_choices();
  for (auto cand : {ConvCandidate::direct, ConvCandidate::onednn_direct}) {
    cpu::force_conv_candidate(cand);
    Tensor y = ops::conv2d_add(in.x, in.k, in.b, residual, c.args);
    cpu::force_conv_candidate(std::nullopt);
    EXPECT_TRUE(std::isnan(y.to_vector<float>()[5])) << cpu::conv_candidate_name(cand);
  }
  instrumentation::set_split_fused_activations(false);
  // The direct candidate's own pass keeps it even with the activation fused.
  cpu::force_conv_candidate(ConvCandidate::direct);
  Tensor y = ops::conv2d_add(in.x, in.k, in.b, residual, c.args);
  cpu::force_conv_candidate(std::nullopt);
  EXPECT_TRUE(std::isnan(y.to_vector<float>()[5]));
  cpu::reset_conv_choices();
}

TEST(Conv2DAdd, Float64RunsThePlainLoops) {
  const Case c = cases()[0];
  Inputs in = inputs_of(c, 70);
  auto f64 = [](const Tensor& t) { return t.astype(DType::float64); };
  Tensor got = ops::conv2d_add(f64(in.x), f64(in.k), f64(in.b), f64(in.r), c.args);
  ASSERT_EQ(got.dtype(), DType::float64);
  Tensor ref = ops::relu(ops::add(ops::conv2d(f64(in.x), f64(in.k), f64(in.b), {.padding = "same"}), f64(in.r)));
  EXPECT_LT(relative_error(got, ref), 1e-12);
}

// Under mixed_bfloat16 (bfloat16 x, kernel, bias and residual): oneDNN with the residual as a
// post-op, the conv, the sum and the activation rounded to bfloat16 once, where the CPU has the
// bfloat16 kernels; the float32 kernel on converted inputs elsewhere. Either way within one
// bfloat16 rounding of the float64 result on the same values.
TEST(Conv2DAdd, Bfloat16RoundsTheResultOnce) {
  ScopedBf16Kernels on(true);
  uint64_t seed = 200;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    Inputs in = inputs_of(c, seed += 10);
    auto bf16 = [](const Tensor& t) { return t.defined() ? t.astype(DType::bfloat16) : t; };
    const Tensor x = bf16(in.x), k = bf16(in.k), b = bf16(in.b), r = bf16(in.r);
    const uint64_t runs = bf16_kernel_runs();
    const Tensor got = ops::conv2d_add(x, k, b, r, c.args);
    ASSERT_EQ(got.dtype(), DType::bfloat16);
    if (bf16_kernels_enabled(DeviceKind::cpu)) EXPECT_EQ(bf16_kernel_runs() - runs, 1u);
    auto f32 = [](const Tensor& t) { return t.defined() ? t.astype(DType::float32) : t; };
    const std::vector<float> want = reference(c, f32(x), f32(k), f32(b), f32(r)).to_vector<float>();
    const std::vector<float> have = got.astype(DType::float32).to_vector<float>();
    // One rounding: half a bfloat16 step, at most 2^-8 of the value, plus float32 accumulation
    // (1e-5 of the sum of |terms|); rounding the conv and then the sum can be off by a whole step.
    auto abs64 = [](const Tensor& t) { return t.defined() ? ops::abs(t.astype(DType::float64)) : t; };
    const std::vector<float> terms =
        ops::add(cpu::reference_conv2d(abs64(x), abs64(k), abs64(b), params_of(c)), abs64(r))
            .astype(DType::float32)
            .to_vector<float>();
    int bad = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (std::fabs(have[i] - want[i]) > std::ldexp(std::fabs(want[i]), -8) + 1e-5f * terms[i] && ++bad <= 3)
        ADD_FAILURE() << "[" << i << "] " << have[i] << " vs " << want[i];
    EXPECT_EQ(bad, 0);
  }
}

TEST(Conv2DAdd, BadInputsAreNamed) {
  const Case c = cases()[0];
  Inputs in = inputs_of(c, 80);
  keras::testing::expect_error<ShapeError>(
      [&] { ops::conv2d_add(in.x, in.k, in.b, Tensor::zeros({2, 12, 12, 8}), c.args); },
      {"conv2d_add", "residual of the output's shape (2, 12, 12, 16)", "(2, 12, 12, 8)"});
  keras::testing::expect_error<TypeError>([&] { ops::conv2d_add(in.x, in.k, in.b, in.r.astype(DType::float64), c.args); },
                                           {"conv2d_add", "residual of dtype float32", "float64"});
  keras::testing::expect_error<ValueError>([&] { ops::conv2d_add(in.x, in.k, in.b, in.r, {.padding = "same", .activation = "gelu"}); },
                                    {"conv2d_add", "activation linear, relu or relu6", "'gelu'"});
  keras::testing::expect_error<ShapeError>([&] { ops::conv2d_add(Tensor::zeros({12, 12, 16}), in.k, in.b, in.r, c.args); },
                                    {"conv2d_add", "(12, 12, 16)"});
}
