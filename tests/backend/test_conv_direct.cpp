// The direct AVX2 gradient kernels against the plain-loop references and against oneDNN: every
// tile shape (1..6 channels or pixels, one or two vectors), strides, dilation, Keras "same"
// padding with odd and even kernels, groups, batch 1, the bias gradient, and results that do not
// depend on the thread count.
#include <gtest/gtest.h>

#include "backend/cpu/conv_backward_weights_direct.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/reference_conv.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/random.h"
#include "backend/threads.h"

using namespace keras;

namespace {

struct Case {
  std::string name;
  Shape x;       // N, H, W, C
  Shape kernel;  // kh, kw, C/groups, O
  int64_t stride_h = 1, stride_w = 1;
  std::string padding = "valid";
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

std::vector<Case> cases() {
  return {
      {"3x3 7 channels -> 24 (tiles of 6+1 channels, 16+8 outputs)", {2, 9, 8, 7}, {3, 3, 7, 24}},
      {"1 channel -> 32 (first layer)", {3, 10, 10, 1}, {3, 3, 1, 32}},
      {"12 -> 16 same", {2, 7, 6, 12}, {3, 3, 12, 16}, 1, 1, "same"},
      {"even kernel same stride 2", {2, 9, 7, 5}, {4, 2, 5, 8}, 2, 2, "same"},
      {"stride 2 odd sizes", {1, 11, 9, 3}, {3, 3, 3, 16}, 2, 2},
      {"asymmetric strides", {2, 9, 10, 4}, {3, 2, 4, 8}, 3, 2, "same"},
      {"dilation 2", {2, 10, 9, 8}, {3, 3, 8, 8}, 1, 1, "valid", 2, 2},
      {"dilation same", {1, 9, 8, 2}, {3, 2, 2, 16}, 1, 1, "same", 2, 3},
      {"groups 2", {2, 6, 6, 10}, {3, 3, 5, 16}, 1, 1, "same", 1, 1, 2},
      {"groups 4, 8 outputs each", {2, 5, 6, 8}, {3, 3, 2, 32}, 2, 1, "same", 1, 1, 4},
      {"1x1", {2, 5, 4, 13}, {1, 1, 13, 40}},
      {"1x1 8 -> 16", {3, 4, 5, 8}, {1, 1, 8, 16}},
      {"kernel = input", {2, 4, 4, 8}, {4, 4, 8, 8}},
      {"kernel larger than input with same padding", {1, 2, 3, 8}, {5, 5, 8, 8}, 1, 1, "same"},
      {"16 -> 8, rows of 13 pixels (tiles of 6+6+1)", {2, 5, 13, 16}, {3, 3, 16, 8}, 1, 1, "same"},
      {"24 -> 4 valid, even kernel", {1, 7, 8, 24}, {2, 4, 24, 4}},
  };
}

ConvParams params_of(const Case& c) {
  ConvParams p;
  p.stride_h = c.stride_h, p.stride_w = c.stride_w;
  p.dilation_h = c.dilation_h, p.dilation_w = c.dilation_w;
  p.groups = c.groups;
  std::tie(p.pad_top, p.pad_bottom) = ops::conv_pads(c.x[1], c.kernel[0], c.padding, c.stride_h, c.dilation_h);
  std::tie(p.pad_left, p.pad_right) = ops::conv_pads(c.x[2], c.kernel[1], c.padding, c.stride_w, c.dilation_w);
  return p;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  return element_as_double(ops::max(ops::abs(ops::subtract(a.astype(DType::float64), b.astype(DType::float64)))), 0);
}

// The op with the direct kernel forced where it applies (the chooser of conv_choice.h might
// pick oneDNN), or switched off.
void use_direct(bool direct) {
  cpu::set_conv_direct(direct);
  cpu::force_conv_candidate(direct ? std::optional(cpu::ConvCandidate::direct) : std::nullopt);
}

// Weight and bias gradients through the op, with the direct kernel on or off.
TensorList weight_gradients(const Tensor& x, const Tensor& dy, const Case& c, bool direct) {
  use_direct(direct);
  TensorList g = ops::conv2d_backward_weights(x, dy, c.kernel, params_of(c), true);
  cpu::set_conv_direct(true);
  cpu::force_conv_candidate(std::nullopt);
  return g;
}

// Input gradients through the op, with the direct kernel on or off.
Tensor input_gradient(const Tensor& dy, const Tensor& kernel, const Case& c, bool direct) {
  use_direct(direct);
  Tensor dx = ops::conv2d_backward_data(dy, kernel, c.x, params_of(c));
  cpu::set_conv_direct(true);
  cpu::force_conv_candidate(std::nullopt);
  return dx;
}

}  // namespace

TEST(ConvBackwardWeightsDirect, MatchesReferenceAndOneDnn) {
  uint64_t seed = 1;
  for (const auto& c : cases()) {
    if (c.kernel[3] % (8 * c.groups) != 0) continue;
    SCOPED_TRACE(c.name);
    ConvParams p = params_of(c);
    ASSERT_TRUE(cpu::conv2d_backward_weights_direct_supported(c.kernel, p) || !cpu::isa_allows_avx2());
    Tensor x = random::normal(c.x, 0, 1, seed++);
    Shape ys = cpu::reference_conv2d(x, random::normal(c.kernel, 0, 1, seed++), Tensor(), p).shape();
    Tensor dy = random::normal(ys, 0, 1, seed++);
    Tensor ref = cpu::reference_conv2d_backward_weights(x, dy, c.kernel, p);
    TensorList direct = weight_gradients(x, dy, c, true);
    TensorList onednn = weight_gradients(x, dy, c, false);
    // Sums of up to a few hundred products of N(0, 1) values: float32 rounding stays far below 1e-3.
    EXPECT_LT(max_abs_diff(direct[0], ref), 1e-3);
    EXPECT_LT(max_abs_diff(onednn[0], ref), 1e-3);
    EXPECT_LT(max_abs_diff(direct[1], ops::sum(dy, {0, 1, 2})), 1e-3);
    // A value that differs from the reference by a whole product would be far outside this.
    EXPECT_GT(max_abs_diff(ref, Tensor::zeros(c.kernel)), 0.1);
  }
}

TEST(ConvBackwardWeightsDirect, SameResultForAnyThreadCount) {
  Case c{"16 -> 32", {4, 12, 11, 16}, {3, 3, 16, 32}, 1, 1, "same"};
  Tensor x = random::normal(c.x, 0, 1, 7);
  Tensor dy = random::normal({4, 12, 11, 32}, 0, 1, 8);
  int threads = num_threads();
  set_num_threads(1);
  TensorList one = weight_gradients(x, dy, c, true);
  set_num_threads(std::max(threads, 3));
  TensorList more = weight_gradients(x, dy, c, true);
  set_num_threads(threads);
  EXPECT_EQ(max_abs_diff(one[0], more[0]), 0.0);
  EXPECT_EQ(max_abs_diff(one[1], more[1]), 0.0);
}

TEST(ConvBackwardWeightsDirect, AppliesOnlyToWholeVectorsOfOutputsPerGroup) {
  ConvParams p;
  EXPECT_FALSE(cpu::conv2d_backward_weights_direct_supported({3, 3, 4, 12}, p));
  p.groups = 2;
  EXPECT_FALSE(cpu::conv2d_backward_weights_direct_supported({3, 3, 4, 24}, p));  // 12 per group
  if (!cpu::isa_allows_avx2()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  EXPECT_TRUE(cpu::conv2d_backward_weights_direct_supported({3, 3, 4, 32}, p));
  EXPECT_FALSE(cpu::conv2d_backward_weights_direct_supported({1, 1, 4, 256}, p));  // 128 per group: oneDNN's
  EXPECT_FALSE(cpu::conv2d_backward_weights_direct_supported({3, 3, 128, 32}, p));
  cpu::set_conv_direct(false);
  EXPECT_FALSE(cpu::conv2d_backward_weights_direct_supported({3, 3, 4, 32}, p));
  cpu::set_conv_direct(true);
}

TEST(ConvBackwardDataDirect, MatchesReferenceAndOneDnn) {
  uint64_t seed = 50;
  int direct_cases = 0;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    ConvParams p = params_of(c);
    Tensor k = random::normal(c.kernel, 0, 1, seed++);
    Shape ys = cpu::reference_conv2d(Tensor::zeros(c.x), k, Tensor(), p).shape();
    Tensor dy = random::normal(ys, 0, 1, seed++);
    Tensor ref = cpu::reference_conv2d_backward_data(dy, k, c.x, p);
    direct_cases += cpu::conv2d_backward_data_direct_supported(c.kernel, p);
    EXPECT_LT(max_abs_diff(input_gradient(dy, k, c, true), ref), 1e-3);
    EXPECT_LT(max_abs_diff(input_gradient(dy, k, c, false), ref), 1e-3);
    EXPECT_GT(max_abs_diff(ref, Tensor::zeros(c.x)), 0.1);
  }
  if (cpu::isa_allows_avx2()) EXPECT_EQ(direct_cases, 6);
}

TEST(ConvBackwardDataDirect, AppliesToStrideOneUngroupedWholeVectorsOfInputChannels) {
  ConvParams p;
  EXPECT_FALSE(cpu::conv2d_backward_data_direct_supported({3, 3, 12, 16}, p));
  p.stride_w = 2;
  EXPECT_FALSE(cpu::conv2d_backward_data_direct_supported({3, 3, 16, 16}, p));
  p.stride_w = 1, p.groups = 2;
  EXPECT_FALSE(cpu::conv2d_backward_data_direct_supported({3, 3, 16, 32}, p));
  p.groups = 1;
  if (!cpu::isa_allows_avx2()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  EXPECT_TRUE(cpu::conv2d_backward_data_direct_supported({3, 3, 16, 16}, p));
  EXPECT_FALSE(cpu::conv2d_backward_data_direct_supported({3, 3, 128, 64}, p));  // wide layers: oneDNN's
  EXPECT_FALSE(cpu::conv2d_backward_data_direct_supported({1, 1, 64, 256}, p));
  cpu::set_conv_direct(false);
  EXPECT_FALSE(cpu::conv2d_backward_data_direct_supported({3, 3, 16, 16}, p));
  cpu::set_conv_direct(true);
}

TEST(ConvDirect, ForwardMatchesReferenceWithBiasAndActivation) {
  uint64_t seed = 90;
  int through_op = 0;
  for (const auto& c : cases()) {
    if (c.groups != 1 || c.kernel[3] % 8 != 0) continue;
    SCOPED_TRACE(c.name);
    ConvParams p = params_of(c);
    Tensor x = random::normal(c.x, 0, 1, seed++);
    Tensor k = random::normal(c.kernel, 0, 1, seed++);
    Tensor b = random::normal({c.kernel[3]}, 0, 1, seed++);
    for (const char* act : {"linear", "relu"}) {
      SCOPED_TRACE(act);
      Tensor ref = cpu::reference_conv2d(x, k, b, p, act);
      if (cpu::isa_allows_avx2()) {
        // Called directly: strided and few-channel problems too, which the dispatch leaves to oneDNN.
        Tensor y = Tensor::empty(ref.shape(), DType::float32);
        cpu::conv2d_direct(x.data<float>(), c.x, k.data<float>(), c.kernel, b.data<float>(), y.data<float>(),
                           ref.shape(), p, act);
        EXPECT_LT(max_abs_diff(y, ref), 1e-4);
      }
      ops::Conv2DArgs args{.strides = {c.stride_h, c.stride_w}, .padding = c.padding,
                           .dilation_rate = {c.dilation_h, c.dilation_w}, .activation = act};
      through_op += cpu::conv2d_direct_supported(c.kernel, p, act);
      EXPECT_LT(max_abs_diff(ops::conv2d(x, k, b, args), ref), 1e-4);
      cpu::set_conv_direct(false);
      EXPECT_LT(max_abs_diff(ops::conv2d(x, k, b, args), ref), 1e-4);
      cpu::set_conv_direct(true);
    }
    EXPECT_GT(max_abs_diff(cpu::reference_conv2d(x, k, b, p), Tensor::zeros(cpu::reference_conv2d(x, k, b, p).shape())),
              0.1);
  }
  if (cpu::isa_allows_avx2()) EXPECT_GT(through_op, 6);
}

TEST(ConvDirect, ForwardAppliesToSmallChannelCountsFusableActivationsAndStrideOneOrTwoOnAvx512) {
  ConvParams p;
  if (!cpu::isa_allows_avx2()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  EXPECT_TRUE(cpu::conv2d_direct_supported({3, 3, 32, 64}, p, "relu"));
  EXPECT_FALSE(cpu::conv2d_direct_supported({3, 3, 32, 64}, p, "tanh"));
  EXPECT_FALSE(cpu::conv2d_direct_supported({3, 3, 4, 64}, p, "linear"));
  EXPECT_FALSE(cpu::conv2d_direct_supported({1, 1, 128, 64}, p, "linear"));
  EXPECT_FALSE(cpu::conv2d_direct_supported({3, 3, 32, 12}, p, "linear"));
  p.stride_h = 2;
  // Stride 2 only where the AVX-512 kernel runs it (16/32/64 channels in, whole vectors out).
  const bool avx512 = cpu::isa_allows_avx512();
  EXPECT_EQ(cpu::conv2d_direct_supported({3, 3, 32, 64}, p, "linear"), avx512);
  EXPECT_FALSE(cpu::conv2d_direct_supported({3, 3, 24, 64}, p, "linear"));
  EXPECT_FALSE(cpu::conv2d_direct_supported({3, 3, 32, 40}, p, "linear"));
  p.stride_h = 3;
  EXPECT_FALSE(cpu::conv2d_direct_supported({3, 3, 32, 64}, p, "linear"));
}
