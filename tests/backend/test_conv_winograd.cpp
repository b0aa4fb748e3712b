// The AVX2 Winograd F(2x2, 3x3) convolutions (backend/cpu/conv_winograd.h) against the plain-loop
// references: "same" and "valid" padding, asymmetric and 2-pixel pads, odd and even output sizes
// (partial edge tiles), channel counts from 8 to 64 (every register-tile remainder of the GEMMs),
// bias and ReLU (keeping NaN), the input gradient, the weight and bias gradients (one block of
// tiles and nine, so one partial sum and eight over one or two blocks each), batch 1; results
// that do not depend on the thread count; and the support predicate.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/reference_conv.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "backend/threads.h"
#include "tests/support/tensor_compare.h"

using namespace keras;
using keras::testing::relative_error;

namespace {

// F(2x2, 3x3)'s transforms add and subtract up to 16 products per output and channel, scaled by
// halves: its error stays within a few float32 roundings of the largest term (seen: 5e-7 to 9e-7
// relative on ResNet-20's layers), far inside the chooser's kWinogradTolerance (1e-4).
constexpr double kTolerance = 1e-5;

struct Case {
  std::string name;
  Shape x;  // N, H, W, C
  int64_t outputs;
  int64_t pad_top, pad_bottom, pad_left, pad_right;
};

std::vector<Case> cases() {
  return {
      {"same 16 -> 16, even sizes", {2, 8, 8, 16}, 16, 1, 1, 1, 1},
      {"valid 32 -> 64, odd output (edge tiles)", {2, 9, 11, 32}, 64, 0, 0, 0, 0},
      {"8 -> 24, a partial GEMM column block", {3, 7, 6, 8}, 24, 1, 1, 1, 1},
      {"64 -> 8, deep channels, 1 output vector", {1, 5, 9, 64}, 8, 1, 1, 1, 1},
      {"pads of 2 and asymmetric pads", {2, 6, 7, 16}, 32, 2, 0, 0, 2},
      {"1x1 image, same", {4, 1, 1, 8}, 16, 1, 1, 1, 1},
      {"two blocks of tiles", {9, 20, 18, 8}, 8, 1, 1, 1, 1},
      // 576 tiles in 9 blocks of 64: a thread runs several blocks, and the weight gradient's 8
      // partial sums (kMaxChunks) take one or two blocks each.
      {"9 blocks of tiles, 64 channels", {4, 24, 24, 64}, 64, 1, 1, 1, 1},
  };
}

ConvParams params_of(const Case& c) {
  ConvParams p;
  p.pad_top = c.pad_top, p.pad_bottom = c.pad_bottom, p.pad_left = c.pad_left, p.pad_right = c.pad_right;
  return p;
}

Shape output_shape(const Case& c) {
  return {c.x[0], c.x[1] + c.pad_top + c.pad_bottom - 2, c.x[2] + c.pad_left + c.pad_right - 2, c.outputs};
}

Tensor forward(const Case& c, const Tensor& x, const Tensor& k, const Tensor& bias, const std::string& act) {
  Tensor y = Tensor::full(output_shape(c), std::nan(""));  // every element must be written
  cpu::conv2d_winograd(x.data<float>(), x.shape(), k.data<float>(), k.shape(), bias.defined() ? bias.data<float>() : nullptr,
                       y.data<float>(), y.shape(), params_of(c), act);
  return y;
}

Tensor backward_data(const Case& c, const Tensor& dy, const Tensor& k) {
  Tensor dx = Tensor::full(c.x, std::nan(""));
  cpu::conv2d_backward_data_winograd(dy.data<float>(), dy.shape(), k.data<float>(), k.shape(), dx.data<float>(), c.x,
                                     params_of(c));
  return dx;
}

struct WeightGrads {
  Tensor dk, db;
};

WeightGrads backward_weights(const Case& c, const Tensor& x, const Tensor& dy) {
  WeightGrads g{Tensor::full({3, 3, c.x[3], c.outputs}, std::nan("")), Tensor::full({c.outputs}, std::nan(""))};
  cpu::conv2d_backward_weights_winograd(x.data<float>(), c.x, dy.data<float>(), dy.shape(), g.dk.data<float>(),
                                        g.dk.shape(), g.db.data<float>(), params_of(c));
  return g;
}

bool has_winograd(const Case& c) {
  return cpu::conv2d_winograd_supported({3, 3, c.x[3], c.outputs}, params_of(c), "relu");
}

}  // namespace

TEST(ConvWinograd, EveryDirectionMatchesTheReference) {
  if (!has_winograd(cases()[0])) GTEST_SKIP() << "no AVX2 on this CPU (or capped below it)";
  uint64_t seed = 10;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(has_winograd(c));
    Tensor x = random::normal(c.x, 0.0, 1.0, seed += 3);
    Tensor k = random::normal({3, 3, c.x[3], c.outputs}, 0.0, 0.2, seed + 1);
    Tensor bias = random::normal({c.outputs}, 0.0, 1.0, seed + 2);
    const ConvParams p = params_of(c);
    EXPECT_LT(relative_error(forward(c, x, k, Tensor(), "linear"), cpu::reference_conv2d(x, k, Tensor(), p)), kTolerance);
    Tensor relu = forward(c, x, k, bias, "relu");
    EXPECT_LT(relative_error(relu, cpu::reference_conv2d(x, k, bias, p, "relu")), kTolerance);
    EXPECT_GE(element_as_double(ops::min(relu), 0), 0.0);
    Tensor dy = random::normal(output_shape(c), 0.0, 1.0, seed + 3);
    EXPECT_LT(relative_error(backward_data(c, dy, k), cpu::reference_conv2d_backward_data(dy, k, c.x, p)), kTolerance);
    WeightGrads g = backward_weights(c, x, dy);
    EXPECT_LT(relative_error(g.dk, cpu::reference_conv2d_backward_weights(x, dy, k.shape(), p)), kTolerance);
    EXPECT_LT(relative_error(g.db, ops::sum(ops::reshape(dy, {-1, c.outputs}), std::vector<int64_t>{0})), kTolerance);
    // Without db the weight gradient is the same and nothing else is written.
    Tensor dk_alone = Tensor::full(k.shape(), std::nan(""));
    cpu::conv2d_backward_weights_winograd(x.data<float>(), c.x, dy.data<float>(), dy.shape(), dk_alone.data<float>(),
                                          k.shape(), nullptr, p);
    EXPECT_EQ(keras::testing::max_abs_difference(dk_alone, g.dk), 0.0);
  }
}

// Restores the thread count however the test ends.
struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

TEST(ConvWinograd, BitsDoNotDependOnTheThreadCount) {
  const Case c = cases().back();
  if (!has_winograd(c)) GTEST_SKIP() << "no AVX2 on this CPU (or capped below it)";
  Tensor x = random::normal(c.x, 0.0, 1.0, 5);
  Tensor k = random::normal({3, 3, c.x[3], c.outputs}, 0.0, 0.2, 6);
  Tensor dy = random::normal(output_shape(c), 0.0, 1.0, 7);
  ThreadCountGuard guard;
  set_num_threads(1);
  Tensor y1 = forward(c, x, k, Tensor(), "linear"), dx1 = backward_data(c, dy, k);
  WeightGrads g1 = backward_weights(c, x, dy);
  for (int n : {2, 3, 5}) {
    set_num_threads(n);
    EXPECT_EQ(keras::testing::max_abs_difference(forward(c, x, k, Tensor(), "linear"), y1), 0.0) << n << " threads";
    EXPECT_EQ(keras::testing::max_abs_difference(backward_data(c, dy, k), dx1), 0.0) << n << " threads";
    WeightGrads g = backward_weights(c, x, dy);
    EXPECT_EQ(keras::testing::max_abs_difference(g.dk, g1.dk), 0.0) << n << " threads";
    EXPECT_EQ(keras::testing::max_abs_difference(g.db, g1.db), 0.0) << n << " threads";
  }
}

// ReLU keeps NaN (as the direct kernels and oneDNN do): a NaN input pixel reaches the outputs of
// every tile that reads it instead of vanishing into max(NaN, 0) = 0.
TEST(ConvWinograd, ReluKeepsNaN) {
  const Case c = cases()[0];
  if (!has_winograd(c)) GTEST_SKIP() << "no AVX2 on this CPU (or capped below it)";
  std::vector<float> values(static_cast<size_t>(shape_numel(c.x)), 1.0f);
  values[(3 * c.x[2] + 4) * c.x[3]] = std::nanf("");  // image 0, pixel (3, 4), channel 0
  Tensor x = Tensor::from_vector(values, c.x);
  Tensor k = random::normal({3, 3, c.x[3], c.outputs}, 0.0, 0.2, 8);
  std::vector<float> y = forward(c, x, k, Tensor(), "relu").to_vector<float>();
  EXPECT_TRUE(std::isnan(y[(3 * c.x[2] + 4) * c.outputs]));  // the output centred on it
  EXPECT_FALSE(std::isnan(y[(7 * c.x[2] + 7) * c.outputs]));  // a corner far from it
}

TEST(ConvWinograd, SupportPredicate) {
  ConvParams same;
  same.pad_top = same.pad_bottom = same.pad_left = same.pad_right = 1;
  if (!cpu::conv2d_winograd_supported({3, 3, 16, 16}, same, "linear")) GTEST_SKIP() << "no AVX2 on this CPU";
  EXPECT_TRUE(cpu::conv2d_winograd_supported({3, 3, 8, 64}, same, "relu"));
  EXPECT_TRUE(cpu::conv2d_backward_data_winograd_supported({3, 3, 16, 16}, same));
  EXPECT_TRUE(cpu::conv2d_backward_weights_winograd_supported({3, 3, 16, 16}, same));
  EXPECT_FALSE(cpu::conv2d_winograd_supported({3, 3, 16, 16}, same, "sigmoid"));
  EXPECT_FALSE(cpu::conv2d_winograd_supported({3, 3, 3, 16}, same, "linear"));   // 3 channels in
  EXPECT_FALSE(cpu::conv2d_winograd_supported({3, 3, 16, 12}, same, "linear"));  // a partial vector out
  EXPECT_FALSE(cpu::conv2d_winograd_supported({3, 3, 128, 64}, same, "linear"));  // wide layers: oneDNN's
  EXPECT_FALSE(cpu::conv2d_backward_weights_winograd_supported({3, 3, 64, 128}, same));
  EXPECT_FALSE(cpu::conv2d_winograd_supported({5, 5, 16, 16}, same, "linear"));
  EXPECT_FALSE(cpu::conv2d_winograd_supported({3, 1, 16, 16}, same, "linear"));
  ConvParams strided = same, dilated = same, grouped = same, padded = same;
  strided.stride_w = 2;
  dilated.dilation_h = 2;
  grouped.groups = 2;
  padded.pad_bottom = 3;
  for (const ConvParams& p : {strided, dilated, grouped, padded}) {
    EXPECT_FALSE(cpu::conv2d_winograd_supported({3, 3, 16, 16}, p, "linear")) << p.str();
    EXPECT_FALSE(cpu::conv2d_backward_data_winograd_supported({3, 3, 16, 16}, p)) << p.str();
    EXPECT_FALSE(cpu::conv2d_backward_weights_winograd_supported({3, 3, 16, 16}, p)) << p.str();
  }
}
