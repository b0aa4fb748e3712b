// backend/cpu/gemm_direct.h: the multithreaded direct GEMM against an in-order fused multiply-add
// loop, bit for bit (its contract: one FMA chain per element, then + bias, then ReLU), for both
// layouts of A, every tile height of a row group, column counts that split unevenly between a
// group's threads, 1 to 4 threads; the dense op inside a tape and the matmul op running it when
// chosen, agreeing with oneDNN, the float64 reference and the inference panels; deterministic
// mode, the direct-kernel switch and unsupported products leaving it out. ctest runs this program again capped at AVX2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backend/autodiff.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/gemm_direct.h"
#include "backend/cpu/reference_linalg.h"
#include "backend/determinism.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "backend/threads.h"
#include "tests/support/tensor_compare.h"
#include "tests/support/full_mantissa_values.h"

namespace keras {
namespace {

using testing::full_mantissa_values;
using testing::max_abs_difference;
using testing::relative_error;

struct Case {
  int64_t m, n, k;
  bool transposed, bias, relu;
};

std::string name(const Case& t) {
  return std::to_string(t.m) + "x" + std::to_string(t.k) + "x" + std::to_string(t.n) + (t.transposed ? " A^T" : " A") +
         (t.bias ? " bias" : "") + (t.relu ? " relu" : "");
}

// gemm_direct's C, with a guard past its end that must stay untouched.
std::vector<float> run(const Case& t, const std::vector<float>& a, const std::vector<float>& b,
                       const std::vector<float>& bias) {
  const float guard = -7777.f;
  std::vector<float> c(static_cast<size_t>(t.m * t.n + 64), guard);
  cpu::DirectGemm g;
  g.m = t.m, g.n = t.n, g.k = t.k, g.a = a.data(), g.a_transposed = t.transposed, g.b = b.data(), g.c = c.data();
  g.bias = t.bias ? bias.data() : nullptr, g.relu = t.relu;
  cpu::gemm_direct(g);
  for (size_t i = static_cast<size_t>(t.m * t.n); i < c.size(); ++i) EXPECT_EQ(c[i], guard) << "written past C at " << i;
  c.resize(static_cast<size_t>(t.m * t.n));
  return c;
}

void check(const Case& t) {
  const std::vector<float> a = full_mantissa_values(t.m * t.k, 1), b = full_mantissa_values(t.k * t.n, 2);
  const std::vector<float> bias = full_mantissa_values(t.n, 3);
  const std::vector<float> c = run(t, a, b, bias);
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < t.n; ++j) {
      float s = 0;
      for (int64_t p = 0; p < t.k; ++p)
        s = std::fma(t.transposed ? a[static_cast<size_t>(p * t.m + i)] : a[static_cast<size_t>(i * t.k + p)],
                     b[static_cast<size_t>(p * t.n + j)], s);
      if (t.bias) s += bias[static_cast<size_t>(j)];
      if (t.relu && s < 0) s = 0;
      ASSERT_EQ(c[static_cast<size_t>(i * t.n + j)], s) << name(t) << ": C[" << i << "][" << j << "]";
    }
}

class GemmDirect : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::gemm_direct_supported(8)) GTEST_SKIP() << "no AVX2 here";
    threads_ = num_threads();
  }
  void TearDown() override { set_num_threads(threads_); }
  int threads_ = 1;
};

TEST_F(GemmDirect, EveryElementIsOneInOrderFmaChainThenBiasThenRelu) {
  std::vector<Case> cases;
  // Rows: every tile height in one row group and in several (two threads split 12+ rows into two
  // groups with AVX2's 6-row tiles, 24+ with AVX-512's 12), 128 as Dense. From m = 9 on these run
  // on the whole team (gemm_direct.cpp's kParallelMacs).
  for (int64_t m : {1, 5, 6, 7, 12, 13, 23, 24, 25, 37, 48, 128})
    for (bool transposed : {false, true}) cases.push_back({m, 40, 100, transposed, m % 2 == 1, m % 3 != 0});
  // Columns: one ymm vector, tiles of 16 and 32 with 8 left over, more blocks than threads share
  // evenly; one row shared by the team (each thread some columns, some threads none).
  for (int64_t n : {8, 16, 24, 32, 48, 72, 136})
    for (bool relu : {false, true}) cases.push_back({30, n, 33, n % 16 == 8, true, relu});
  cases.push_back({1, 256, 256, false, true, true});
  cases.push_back({2, 40, 512, true, false, true});
  // Depths: every remainder of the unrolled loop.
  for (int64_t k : {1, 2, 3, 4, 5, 100}) cases.push_back({9, 24, k, k % 2 == 0, true, true});
  for (int threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
    for (const Case& c : cases) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      check(c);
    }
  }
}

TEST_F(GemmDirect, ReluKeepsNaN) {
  const Case t{3, 16, 4, false, false, true};
  std::vector<float> a = full_mantissa_values(t.m * t.k, 4), b = full_mantissa_values(t.k * t.n, 5);
  a[static_cast<size_t>(t.k)] = std::numeric_limits<float>::quiet_NaN();  // row 1
  const std::vector<float> c = run(t, a, b, {});
  for (int64_t j = 0; j < t.n; ++j) {
    EXPECT_FALSE(std::isnan(c[static_cast<size_t>(j)])) << j;
    EXPECT_TRUE(std::isnan(c[static_cast<size_t>(t.n + j)])) << j;
  }
}

// A Dense layer's forward inside a tape, its weight gradient (x^T dz: a matmul with A transposed)
// and input gradient: the same results with gemm_direct forced as with oneDNN forced, the float64
// reference's within float32 rounding, and the forward bit for bit the inference panels'.
TEST_F(GemmDirect, DenseTrainingStepRunsItWhenChosen) {
  set_num_threads(2);
  Tensor x = random::normal({50, 70}, 0, 1, 6), w = random::normal({70, 48}, 0, 0.2, 7), b = random::normal({48}, 0, 1, 8);
  auto step = [&](cpu::ConvCandidate c) {
    cpu::force_conv_candidate(c);
    GradientTape tape;
    tape.watch(w);
    Tensor y = ops::dense(x, w, b, "relu");
    TensorList g = tape.gradient(ops::sum(ops::multiply(y, y)), {w});
    cpu::force_conv_candidate(std::nullopt);
    return std::make_pair(y, g[0]);
  };
  const auto [y_direct, dw_direct] = step(cpu::ConvCandidate::direct);
  const auto [y_onednn, dw_onednn] = step(cpu::ConvCandidate::onednn_direct);
  const Tensor y_ref = cpu::reference_dense(x, w, b, "relu");
  EXPECT_LT(relative_error(y_direct, y_ref), 1e-6);
  EXPECT_LT(relative_error(y_onednn, y_ref), 1e-6);
  // d sum(y^2) / dW = x^T (2 y), y's zeros masking as ReLU's derivative does.
  const Tensor dw_ref = cpu::reference_matmul(x.astype(DType::float64), ops::multiply(y_ref, 2.0).astype(DType::float64), true, false);
  EXPECT_LT(relative_error(dw_direct, dw_ref), 1e-5);
  EXPECT_LT(relative_error(dw_onednn, dw_ref), 1e-5);
  cpu::force_conv_candidate(cpu::ConvCandidate::direct);
  EXPECT_EQ(max_abs_difference(y_direct, ops::dense(x, w, b, "relu")), 0.0) << "outside the tape: the panels";
  cpu::force_conv_candidate(std::nullopt);
}

TEST_F(GemmDirect, MatmulRunsItForOneProductWithBAsItLies) {
  set_num_threads(2);
  Tensor a = random::normal({33, 20}, 0, 1, 9), at = random::normal({20, 33}, 0, 1, 10), b = random::normal({20, 24}, 0, 1, 11);
  Tensor a3 = random::normal({3, 11, 20}, 0, 1, 12);  // a batch folded into the rows
  for (auto c : {cpu::ConvCandidate::direct, cpu::ConvCandidate::onednn_direct}) {
    cpu::force_conv_candidate(c);
    SCOPED_TRACE(cpu::conv_candidate_name(c));
    EXPECT_LT(relative_error(ops::matmul(a, b), cpu::reference_matmul(a, b, false, false)), 1e-6);
    EXPECT_LT(relative_error(ops::matmul(at, b, true, false), cpu::reference_matmul(at, b, true, false)), 1e-6);
    EXPECT_LT(relative_error(ops::matmul(a3, b), cpu::reference_matmul(a3, b, false, false)), 1e-6);
    // A transposed with a batch: one product only for a batch of one (the rest: oneDNN's batch).
    for (const Shape& shape : {Shape{3, 20, 11}, Shape{1, 20, 33}}) {
      Tensor a3t = random::normal(shape, 0, 1, 13);
      EXPECT_LT(relative_error(ops::matmul(a3t, b, true, false), cpu::reference_matmul(a3t, b, true, false)), 1e-6)
          << shape_str(shape);
    }
    cpu::force_conv_candidate(std::nullopt);
  }
}

size_t decisions(const std::string& prefix) {
  size_t count = 0;
  for (const auto& c : cpu::conv_choices()) count += c.key.rfind(prefix, 0) == 0;
  return count;
}

TEST_F(GemmDirect, TheChooserDecidesEachProblemOnceByItsKey) {
  cpu::reset_conv_choices();
  Tensor x = random::normal({16, 30}, 0, 1, 13), w = random::normal({30, 40}, 0, 1, 14), dz = random::normal({16, 40}, 0, 1, 15);
  for (int call = 0; call < 2; ++call) {
    {
      GradientTape tape;
      EXPECT_LT(relative_error(ops::dense(x, w, Tensor(), "linear"), cpu::reference_dense(x, w, Tensor(), "linear")), 1e-6);
    }
    EXPECT_LT(relative_error(ops::matmul(x, dz, true, false), cpu::reference_matmul(x, dz, true, false)), 1e-6);
  }
  EXPECT_EQ(decisions("dense_train;16;30;40;0;linear;0|"), 1u);
  EXPECT_EQ(decisions("matmul;30;16;40;1;linear;0|"), 1u);
  EXPECT_EQ(cpu::conv_choice_stats().timed, 2u);
  cpu::reset_conv_choices();
}

// KERAS_CONV_DIRECT=0 (set_conv_direct(false)) switches it off with the direct convolutions.
TEST_F(GemmDirect, TheDirectSwitchTurnsItOff) {
  cpu::reset_conv_choices();
  cpu::set_conv_direct(false);
  EXPECT_FALSE(cpu::gemm_direct_supported(16));
  Tensor a = random::normal({12, 20}, 0, 1, 22), b = random::normal({20, 16}, 0, 1, 23);
  EXPECT_LT(relative_error(ops::matmul(a, b), cpu::reference_matmul(a, b, false, false)), 1e-6);
  cpu::set_conv_direct(true);
  EXPECT_EQ(decisions("matmul;"), 0u);
  cpu::reset_conv_choices();
}

// Not for it: B transposed, columns not a multiple of 8, a batch of distinct B, deterministic
// mode. oneDNN runs those, nothing is decided, and the results stay right.
TEST_F(GemmDirect, OtherProductsAndDeterministicModeKeepOneDnn) {
  cpu::reset_conv_choices();
  Tensor a = random::normal({12, 20}, 0, 1, 16), b = random::normal({20, 10}, 0, 1, 17), bt = random::normal({24, 20}, 0, 1, 18);
  Tensor a3 = random::normal({2, 12, 20}, 0, 1, 19), b3 = random::normal({2, 20, 16}, 0, 1, 20), b16 = random::normal({20, 16}, 0, 1, 21);
  EXPECT_LT(relative_error(ops::matmul(a, b), cpu::reference_matmul(a, b, false, false)), 1e-6);
  EXPECT_LT(relative_error(ops::matmul(a, bt, false, true), cpu::reference_matmul(a, bt, false, true)), 1e-6);
  EXPECT_LT(relative_error(ops::matmul(a3, b3), cpu::reference_matmul(a3, b3, false, false)), 1e-6);
  set_op_determinism(true);
  Tensor first = ops::matmul(a, b16), dense_first;
  EXPECT_EQ(max_abs_difference(first, ops::matmul(a, b16)), 0.0);
  for (int call = 0; call < 2; ++call) {
    GradientTape tape;
    Tensor y = ops::dense(a, b16, Tensor(), "relu");
    if (call == 0) dense_first = y;
    EXPECT_EQ(max_abs_difference(y, dense_first), 0.0);
  }
  set_op_determinism(false);
  EXPECT_LT(relative_error(first, cpu::reference_matmul(a, b16, false, false)), 1e-6);
  EXPECT_LT(relative_error(dense_first, cpu::reference_dense(a, b16, Tensor(), "relu")), 1e-6);
  EXPECT_EQ(decisions("matmul;") + decisions("dense_train;"), 0u)
      << "a product gemm_direct does not take, or deterministic mode, was timed";
  cpu::reset_conv_choices();
}

}  // namespace
}  // namespace keras
