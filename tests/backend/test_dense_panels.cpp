// backend/cpu/dense_panels.h: the project's Dense forward from packed column panels against the
// plain-loop reference (every tile height and a hanging last panel), its independence of the
// thread count, and the dense op choosing it only for a weight unchanged between calls, never
// from a stale packed copy. ctest runs this program again capped at AVX2 (16-column panels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <vector>

#include "backend/autodiff.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/dense_panels.h"
#include "backend/cpu/reference_linalg.h"
#include "backend/cpu/weight_cache.h"
#include "backend/determinism.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "backend/threads.h"
#include "tests/support/tensor_compare.h"

namespace keras {
namespace {

using testing::max_abs_difference;
using testing::relative_error;

// dense_panels on x (rows, k) and w (k, units) packed here as dense_panels.h describes the
// layout ([panels][k rounded up to 16][width], padding NaN: it must never reach a result), its
// output inside a NaN-guarded buffer: returns y and checks that nothing past it was written.
Tensor panels_forward(const Tensor& x, const Tensor& w, const Tensor& bias, bool relu) {
  const int64_t rows = x.dim(0), k = w.dim(0), units = w.dim(1), width = cpu::dense_panel_width();
  const int64_t padded_k = (k + 15) / 16 * 16, panels = (units + width - 1) / width;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor packed_tensor = Tensor::empty({panels * padded_k * width}, DType::float32);
  packed_tensor.fill_(nan);
  float* packed = packed_tensor.data<float>();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed) % 64, 0u) << "the kernels load panel rows aligned";
  const float* pw = w.data<float>();
  for (int64_t j = 0; j < units; ++j)
    for (int64_t p = 0; p < k; ++p) packed[((j / width) * padded_k + p) * width + j % width] = pw[p * units + j];
  std::vector<float> out(static_cast<size_t>(rows * units + 64), nan);
  cpu::dense_panels(rows, k, units, x.data<float>(), packed, padded_k, bias.defined() ? bias.data<float>() : nullptr,
                    out.data(), relu);
  for (size_t i = static_cast<size_t>(rows * units); i < out.size(); ++i)
    EXPECT_TRUE(std::isnan(out[i])) << "written past the output at " << i;
  out.resize(static_cast<size_t>(rows * units));
  return Tensor::from_vector(out, {rows, units});
}

// max |y - ref| relative to max(1, max |ref|): a relu may zero a small case's whole reference.
double error_against(const Tensor& y, const Tensor& ref) {
  const double scale = element_as_double(ops::max(ops::abs(ref.astype(DType::float64))), 0);
  return max_abs_difference(y, ref) / std::max(1.0, scale);
}

class DensePanels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::dense_panels_supported("relu")) GTEST_SKIP() << "no AVX2 here";
  }
};

TEST_F(DensePanels, MatchesTheReferenceForEveryTileHeightAndHangingPanel) {
  const int64_t width = cpu::dense_panel_width(), tile_rows = width == 32 ? 12 : 6;
  // Units a partial panel, exact panels, and panels and a bit; k down to 1 and not a multiple of 16.
  struct Case {
    int64_t rows, k, units;
  };
  // On 2 threads (set below) 128 and 61 rows go in two groups with either tile height.
  std::vector<Case> cases = {{1, 1, 1},     {5, 3, 10},   {25, 70, 2 * width}, {128, 100, 10}, {37, 17, 3 * width - 5},
                             {61, 40, 2 * width + 7}};
  for (int64_t rows = 1; rows <= 2 * tile_rows + 1; ++rows) cases.push_back({rows, 33, width + 3});  // every tile height
  const int before = num_threads();
  set_num_threads(2);
  for (const Case& c : cases)
    for (bool relu : {false, true})
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.k) + "x" + std::to_string(c.units) +
                     (relu ? " relu" : " linear") + (with_bias ? " bias" : ""));
        Tensor x = random::normal({c.rows, c.k}, 0, 1, 1), w = random::normal({c.k, c.units}, 0, 1, 2);
        Tensor b = with_bias ? random::normal({c.units}, 0, 1, 3) : Tensor();
        Tensor y = panels_forward(x, w, b, relu);
        EXPECT_LT(error_against(y, cpu::reference_dense(x, w, b, relu ? "relu" : "linear")), 1e-6);
      }
  set_num_threads(before);
}

TEST_F(DensePanels, ReluKeepsNaNAsTheOtherKernelsDo) {
  Tensor x = random::normal({3, 8}, 0, 1, 4), w = random::normal({8, 20}, 0, 1, 5);
  x.data<float>()[8] = std::numeric_limits<float>::quiet_NaN();  // row 1
  std::vector<float> y = panels_forward(x, w, Tensor(), true).to_vector<float>();
  for (int j = 0; j < 20; ++j) {
    EXPECT_FALSE(std::isnan(y[static_cast<size_t>(j)]));
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(20 + j)])) << j;
  }
}

TEST(DensePanelRowGroups, EveryGroupGetsTwoTilesAndAShareOfTheThreads) {
  EXPECT_EQ(cpu::dense_row_groups(128, 12, 2), 2);  // 64 rows a thread
  EXPECT_EQ(cpu::dense_row_groups(48, 12, 2), 2);
  EXPECT_EQ(cpu::dense_row_groups(47, 12, 2), 1);   // under two tiles a group: threads share rows
  EXPECT_EQ(cpu::dense_row_groups(128, 12, 16), 4); // 4 groups of 32 rows, 4 threads each
  EXPECT_EQ(cpu::dense_row_groups(100, 12, 3), 3);
  EXPECT_EQ(cpu::dense_row_groups(100, 12, 5), 1);  // 5 has no divisor that leaves 24 rows a group
  EXPECT_EQ(cpu::dense_row_groups(60, 6, 6), 3);
  EXPECT_EQ(cpu::dense_row_groups(128, 12, 1), 1);
  EXPECT_EQ(cpu::dense_row_groups(0, 12, 2), 1);
}

TEST_F(DensePanels, ResultsDoNotDependOnTheThreadCount) {
  // 50 rows in 12-row tiles: one group on 1 and 3 threads, two on 2 (a thread each) and on 4 (two
  // threads each); in 6-row tiles (AVX2) as many groups as threads.
  Tensor x = random::normal({50, 90}, 0, 1, 6), w = random::normal({90, 70}, 0, 1, 7), b = random::normal({70}, 0, 1, 8);
  const int before = num_threads();
  set_num_threads(1);
  Tensor y1 = panels_forward(x, w, b, true);
  for (int threads : {2, 3, 4}) {
    set_num_threads(threads);
    EXPECT_EQ(max_abs_difference(y1, panels_forward(x, w, b, true)), 0.0) << threads << " threads";
  }
  set_num_threads(before);
}

// Through ops::dense outside a tape: every call, the first included, runs the chosen kernel (the
// panels where forced: then bit for bit the panels on this test's own packing, which checks
// oneDNN's packed layout and its panel stride over several panels); a weight written between
// calls is never read from its old packing.
TEST_F(DensePanels, DenseOpRunsThePanelsFromTheFirstCallAndSeesWrites) {
  cpu::reset_conv_choices();
  cpu::force_conv_candidate(cpu::ConvCandidate::direct);
  const int64_t units = 2 * cpu::dense_panel_width() + 5;
  Tensor x = random::normal({9, 17}, 0, 1, 9), w = random::normal({17, units}, 0, 1, 10), b = random::normal({units}, 0, 1, 11);
  for (int call = 0; call < 2; ++call)
    EXPECT_EQ(max_abs_difference(ops::dense(x, w, b, "relu"), panels_forward(x, w, b, true)), 0.0) << call;
  w.copy_from(random::normal({17, units}, 0, 1, 12));  // a new version, as an optimizer step writes it
  EXPECT_EQ(max_abs_difference(ops::dense(x, w, b, "relu"), panels_forward(x, w, b, true)), 0.0);
  EXPECT_LT(relative_error(ops::dense(x, w, b, "relu"), cpu::reference_dense(x, w, b, "relu")), 1e-6);
  cpu::force_conv_candidate(std::nullopt);
  // Unforced, the chooser decides once for the problem and names it in its decisions.
  EXPECT_LT(relative_error(ops::dense(x, w, b, "relu"), cpu::reference_dense(x, w, b, "relu")), 1e-6);
  bool decided = false;
  for (const auto& c : cpu::conv_choices()) decided = decided || c.key.rfind("dense;17;" + std::to_string(units) + ";relu;1", 0) == 0;
  EXPECT_TRUE(decided);
  cpu::reset_conv_choices();
}

// In a training step (a recording tape) the weight changes every step: the product reads it as it
// lies (gemm_direct.h where forced here), and nothing is packed.
TEST_F(DensePanels, TrainingStepsPackNothing) {
  cpu::force_conv_candidate(cpu::ConvCandidate::direct);
  Tensor x = random::normal({8, 20}, 0, 1, 18), w = random::normal({20, 32}, 0, 1, 19);  // 32 units: gemm_direct's
  const auto reorders = cpu::weight_cache_stats().reorders;
  for (int step = 0; step < 3; ++step) {
    GradientTape tape;
    tape.watch(w);
    Tensor y = ops::dense(x, w, Tensor(), "relu");
    EXPECT_LT(relative_error(y, cpu::reference_dense(x, w, Tensor(), "relu")), 1e-6);
    TensorList g = tape.gradient(ops::sum(y), {w});
    w.copy_from(ops::subtract(w, ops::multiply(g[0], 0.01)));
  }
  EXPECT_EQ(cpu::weight_cache_stats().reorders, reorders);
  cpu::force_conv_candidate(std::nullopt);
}

// Once oneDNN has won a problem (here by a pin) no panel copy of its weight is made: the weight
// cache holds what it holds with the panels switched off.
TEST_F(DensePanels, NoPanelCopyOnceOneDnnIsChosen) {
  cpu::reset_conv_choices();
  const std::string pins = ::testing::TempDir() + "dense_panels_pins.txt";
  {
    std::ofstream out(pins);
    out << "dense;30;20;linear;0|t" << num_threads() << " onednn_direct\n";
  }
  cpu::load_conv_choices(pins);
  auto entries_after_calls = [](uint64_t seed) {
    Tensor x = random::normal({6, 30}, 0, 1, seed), w = random::normal({30, 20}, 0, 1, seed + 1);
    cpu::clear_weight_cache();  // counted from empty (an insert also prunes earlier tests' dead weights)
    for (int call = 0; call < 3; ++call)
      EXPECT_LT(relative_error(ops::dense(x, w, Tensor(), "linear"), cpu::reference_dense(x, w, Tensor(), "linear")), 1e-6);
    return cpu::weight_cache_stats().entries;
  };
  const size_t pinned = entries_after_calls(13);
  cpu::set_conv_direct(false);
  const size_t without_panels = entries_after_calls(13);
  cpu::set_conv_direct(true);
  EXPECT_EQ(pinned, without_panels);
  cpu::reset_conv_choices();
}

// Deterministic mode keeps oneDNN, so the first call and later ones give the same bits.
TEST_F(DensePanels, DeterministicModeGivesTheSameBitsFromTheFirstCall) {
  set_op_determinism(true);
  Tensor x = random::normal({20, 50}, 0, 1, 15), w = random::normal({50, 40}, 0, 1, 16), b = random::normal({40}, 0, 1, 17);
  Tensor first = ops::dense(x, w, b, "relu");
  for (int call = 1; call < 3; ++call) EXPECT_EQ(max_abs_difference(ops::dense(x, w, b, "relu"), first), 0.0) << call;
  set_op_determinism(false);
}

}  // namespace
}  // namespace keras
