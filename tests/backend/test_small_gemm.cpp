// backend/cpu/small_gemm.h: the Winograd convolutions' single-threaded GEMM against an in-order
// fused multiply-add loop, bit for bit (its contract: one FMA chain per element, summed over k in
// order), for every tile height of both register-tile kinds, every column count the Winograd
// problems use, both layouts of A and with and without accumulation. Never writes outside C's
// columns nor reads C without `accumulate`. ctest runs this program again capped at AVX2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/small_gemm.h"

namespace keras {
namespace {

// Reproducible values in [-3, 3] with full mantissas (multiples of 1/337), so that a different
// summation order or a lost FMA would change low bits.
std::vector<float> values(int64_t count, int seed) {
  std::vector<float> v(static_cast<size_t>(count));
  uint32_t s = static_cast<uint32_t>(seed) * 2654435761u + 1u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int32_t>(s >> 9) % 2001 - 1000) / 337.0f;
  }
  return v;
}

struct Case {
  int64_t m, n, k;
  bool transposed, accumulate;
};

void check(const Case& t) {
  const int64_t ldb = t.n + 8, ldc = t.n + 8;  // padded rows: the guard columns must stay untouched
  const std::vector<float> a = values(t.m * t.k, 1), b = values(t.k * ldb, 2), old = values(t.m * ldc, 3);
  const int64_t a_row = t.transposed ? 1 : t.k, a_col = t.transposed ? t.m : 1;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> c(static_cast<size_t>(t.m * ldc));
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const auto at = static_cast<size_t>(i * ldc + j);
      c[at] = j >= t.n ? nan : t.accumulate ? old[at] : nan;  // NaN where nothing may be read
    }
  cpu::small_gemm(t.m, t.n, t.k, a.data(), a_row, a_col, b.data(), ldb, c.data(), ldc, t.accumulate);
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      float sum = 0.f;
      for (int64_t p = 0; p < t.k; ++p)
        sum = std::fma(a[static_cast<size_t>(i * a_row + p * a_col)], b[static_cast<size_t>(p * ldb + j)], sum);
      const auto at = static_cast<size_t>(i * ldc + j);
      if (t.accumulate) sum = old[at] + sum;
      ASSERT_EQ(c[at], sum) << "m " << t.m << " n " << t.n << " k " << t.k << (t.transposed ? " A^T" : " A")
                            << (t.accumulate ? " accumulate" : "") << ": C[" << i << "][" << j << "]";
    }
    for (int64_t j = t.n; j < ldc; ++j)
      ASSERT_TRUE(std::isnan(c[static_cast<size_t>(i * ldc + j)])) << "written past C's columns at row " << i;
  }
}

TEST(SmallGemm, MatchesAnInOrderFmaLoopBitForBit) {
  ASSERT_TRUE(cpu::small_gemm_available()) << "the project's CI machines have AVX2";
  // Rows 1..25: every height of the 6-row ymm and 12-row zmm tiles, alone and after full blocks.
  for (int64_t m = 1; m <= 25; ++m)
    for (int64_t n : {8, 16, 24, 32, 40, 48, 56, 64})
      for (int64_t k : {1, 5, 37})
        for (bool transposed : {false, true})
          for (bool accumulate : {false, true}) check({m, n, k, transposed, accumulate});
}

TEST(SmallGemm, EmptyProductsWriteNothingOrKeepC) {
  std::vector<float> c = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f};
  const std::vector<float> before = c;
  cpu::small_gemm(0, 8, 4, nullptr, 4, 1, nullptr, 8, c.data(), 8, false);
  cpu::small_gemm(1, 0, 4, nullptr, 4, 1, nullptr, 8, c.data(), 8, false);
  EXPECT_EQ(c, before);
  cpu::small_gemm(1, 8, 0, nullptr, 0, 1, nullptr, 8, c.data(), 8, true);  // k = 0: C += 0
  EXPECT_EQ(c, before);
  cpu::small_gemm(1, 8, 0, nullptr, 0, 1, nullptr, 8, c.data(), 8, false);  // k = 0: C = 0
  EXPECT_EQ(c, std::vector<float>(8, 0.f));
}

}  // namespace
}  // namespace keras
