// backend/cpu/small_gemm.h: the Winograd convolutions' single-threaded GEMM against an in-order
// fused multiply-add loop, bit for bit (its contract: one FMA chain per element, summed over k in
// order), for every tile height, every column count the Winograd problems use, depths of every
// remainder of the unrolled loop, both layouts of A, strides all different, with and without
// accumulation; never writing outside C nor reading C without `accumulate`. Uncapped on an
// AVX-512 CPU this runs the zmm tiles (and ymm for a last 8 columns); ctest runs the program
// again capped at AVX2, where the 6 x 16 and 6 x 8 ymm tiles take every column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/small_gemm.h"
#include "tests/support/full_mantissa_values.h"

namespace keras {
namespace {

using testing::full_mantissa_values;

constexpr float kGuard = -7777.f;  // finite, so that an accumulating write past C shows too

struct Case {
  int64_t m, n, k;
  bool transposed, accumulate;
};

void check(const Case& t) {
  // Every stride its own, so that one used for another shows: B's rows, C's rows, A's step.
  const int64_t ldb = t.n + 8, ldc = t.n + 24;
  const int64_t a_row = t.transposed ? 1 : t.k + 3, a_col = t.transposed ? t.m + 5 : 1;
  const std::vector<float> a = full_mantissa_values(t.transposed ? t.k * (t.m + 5) : t.m * (t.k + 3), 1);
  const std::vector<float> b = full_mantissa_values(t.k * ldb, 2), old = full_mantissa_values(t.m * ldc, 3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> c(static_cast<size_t>((t.m + 1) * ldc), kGuard);  // row m: a guard row
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < t.n; ++j) {
      const auto at = static_cast<size_t>(i * ldc + j);
      c[at] = t.accumulate ? old[at] : nan;  // NaN where nothing may be read
    }
  cpu::small_gemm(t.m, t.n, t.k, a.data(), a_row, a_col, b.data(), ldb, c.data(), ldc, t.accumulate);
  const auto where = [&](int64_t i, int64_t j) {
    return ::testing::Message() << "m " << t.m << " n " << t.n << " k " << t.k << (t.transposed ? " A^T" : " A")
                              << (t.accumulate ? " accumulate" : "") << ": C[" << i << "][" << j << "]";
  };
  for (int64_t i = 0; i <= t.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[static_cast<size_t>(i * ldc + j)];
      if (i == t.m || j >= t.n) {
        ASSERT_EQ(got, kGuard) << where(i, j) << " is outside C and was written";
        continue;
      }
      float sum = 0.f;
      for (int64_t p = 0; p < t.k; ++p)
        sum = std::fma(a[static_cast<size_t>(i * a_row + p * a_col)], b[static_cast<size_t>(p * ldb + j)], sum);
      if (t.accumulate) sum = old[static_cast<size_t>(i * ldc + j)] + sum;
      ASSERT_EQ(got, sum) << where(i, j);
    }
}

TEST(SmallGemm, MatchesAnInOrderFmaLoopBitForBit) {
  if (!cpu::small_gemm_available()) GTEST_SKIP() << "no AVX2 with FMA on this CPU (or capped below it)";
  // Rows 1..25: every height of the 6-row ymm and 12-row zmm tiles, alone and after full blocks;
  // depths 0..4 and beyond: every remainder of the loop unrolled by 4.
  for (int64_t m = 1; m <= 25; ++m)
    for (int64_t n : {8, 16, 24, 32, 40, 48, 56, 64})
      for (int64_t k : {0, 1, 2, 3, 4, 8, 37, 64})
        for (bool transposed : {false, true})
          for (bool accumulate : {false, true}) check({m, n, k, transposed, accumulate});
}

TEST(SmallGemm, EmptyProductsWriteNothing) {
  if (!cpu::small_gemm_available()) GTEST_SKIP() << "no AVX2 with FMA on this CPU (or capped below it)";
  std::vector<float> c(32, kGuard);
  cpu::small_gemm(0, 32, 4, nullptr, 4, 1, nullptr, 32, c.data(), 32, false);
  cpu::small_gemm(1, 0, 4, nullptr, 4, 1, nullptr, 32, c.data(), 32, false);
  EXPECT_EQ(c, std::vector<float>(32, kGuard));
}

}  // namespace
}  // namespace keras
