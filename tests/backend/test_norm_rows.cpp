// The batch-norm row loops (backend/cpu/norm_rows.h) against plain scalar loops, bit for bit:
// whichever code the CPU runs (the AVX-512 intrinsics for bfloat16, or the per-ISA clones) must
// round exactly as the scalar code, since the backward recomputes the forward's ReLU mask from x.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/norm_rows.h"
#include "backend/cpu/bf16_round_avx512.h"
#include "backend/half.h"

namespace keras::cpu {
namespace {

// Keeps the compiler from fusing a product into the next sum (the kernels never fuse).
inline float barrier(float v) {
  asm volatile("" : "+x"(v));
  return v;
}
inline float mul(float a, float b) { return barrier(a * b); }

float window(float g, float x, float a, float b, float hi) {
  const float y = mul(x, a) + b;
  return (y > 0.f && y < hi) ? g : 0.f;
}

struct Case {
  int64_t rows, C;
};

// Values with the awkward ones mixed in: NaN, infinities, signed zeros, subnormals, ties.
std::vector<float> values(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.f, 2.f);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), 0.f, -0.f, 1e-40f, -3e-39f, 1.00390625f};
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (i % 37 == 5) ? special[(i / 37) % 8] : normal(gen);
  return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = float_to_bfloat16(v[i]);
  return b;
}

float as_float(float v) { return v; }
float as_float(uint16_t v) { return bfloat16_to_float(v); }
void store(float& d, float v) { d = v; }
void store(uint16_t& d, float v) { d = float_to_bfloat16(v); }

template <class S>
bool same_bits(const std::vector<S>& a, const std::vector<S>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(S)) == 0;
}

template <class S>
void check_rows(const Case& k, const std::vector<S>& x, const std::vector<S>& g) {
  const int64_t rows = k.rows, C = k.C;
  const std::string where = "rows " + std::to_string(rows) + ", C " + std::to_string(C);
  std::vector<float> a = values(C, 11), b = values(C, 12), mu = values(C, 13), A = values(C, 14), B = values(C, 15),
                     K = values(C, 16);
  for (auto& v : a)
    if (std::isnan(v)) v = 0.5f;  // per-channel factors are finite in the kernels
  for (auto* arr : {&b, &mu, &A, &B, &K})
    for (auto& v : *arr)
      if (!std::isfinite(v)) v = -1.25f;
  for (int64_t c = 2; c < C; c += 5) {  // subnormal results, which VCVTNEPS2BF16 alone would flush to zero
    a[c] = A[c] = 1e-39f;
    b[c] = B[c] = K[c] = 0.f;
  }
  for (float hi : {std::numeric_limits<float>::infinity(), 6.f}) {
    const ReluRows relu{a.data(), b.data(), hi};
    // affine
    for (bool with_relu : {false, true}) {
      std::vector<S> got(x.size()), want(x.size());
      affine_rows(x.data(), got.data(), rows, C, a.data(), b.data(), with_relu, hi);
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t c = 0; c < C; ++c) {
          const float v = mul(as_float(x[m * C + c]), a[c]) + b[c];
          const float clamped = v > 0.f ? (v < hi ? v : hi) : 0.f;
          store(want[m * C + c], !with_relu ? v : (v != v ? v : clamped));
        }
      EXPECT_TRUE(same_bits(got, want)) << "affine_rows, " << where << ", relu " << with_relu << ", hi " << hi;
    }
    // the residual block's affine + add + ReLU, g standing for the residual: y and the sum
    // rounded to S as the separate ops store them
    {
      std::vector<S> got(x.size()), want(x.size());
      affine_add_relu_rows(x.data(), g.data(), got.data(), rows, C, a.data(), b.data());
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t c = 0; c < C; ++c) {
          S y{}, sum{};
          store(y, mul(as_float(x[m * C + c]), a[c]) + b[c]);
          store(sum, as_float(y) + as_float(g[m * C + c]));
          const float v = as_float(sum);
          store(want[m * C + c], v > 0.f || v != v ? v : 0.f);
        }
      EXPECT_TRUE(same_bits(got, want)) << "affine_add_relu_rows, " << where;
    }
    // both backward passes, with and without the window
    for (bool with_relu : {false, true}) {
      const ReluRows r = with_relu ? relu : ReluRows{};
      std::vector<float> s1(C, 0.25f), s2(C, -0.5f), w1 = s1, w2 = s2;
      grad_sum_rows(g.data(), x.data(), rows, C, mu.data(), r, s1.data(), s2.data());
      std::vector<S> got(x.size()), want(x.size());
      grad_dx_rows(g.data(), x.data(), got.data(), rows, C, A.data(), B.data(), K.data(), r);
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t c = 0; c < C; ++c) {
          const float xv = as_float(x[m * C + c]), gv = as_float(g[m * C + c]);
          const float gm = with_relu ? window(gv, xv, a[c], b[c], hi) : gv;
          w1[c] = w1[c] + gm;
          w2[c] = w2[c] + mul(gm, xv - mu[c]);
          store(want[m * C + c], (mul(A[c], gm) + mul(B[c], xv)) + K[c]);
        }
      EXPECT_TRUE(same_bits(s1, w1) && same_bits(s2, w2)) << "grad_sum_rows, " << where << ", relu " << with_relu;
      EXPECT_TRUE(same_bits(got, want)) << "grad_dx_rows, " << where << ", relu " << with_relu << ", hi " << hi;
    }
  }
  // moments
  std::vector<float> s1(C, 1.f), s2(C, 2.f), w1 = s1, w2 = s2;
  moment_rows(x.data(), rows, C, mu.data(), s1.data(), s2.data());
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float d = as_float(x[m * C + c]) - mu[c];
      w1[c] = w1[c] + d;
      w2[c] = w2[c] + mul(d, d);
    }
  EXPECT_TRUE(same_bits(s1, w1) && same_bits(s2, w2)) << "moment_rows, " << where;
}

const Case kCases[] = {{1, 16}, {37, 16}, {9, 32}, {5, 64}, {7, 24}, {11, 5}, {3, 1}, {4, 100}, {0, 16}};

TEST(NormRows, Float32MatchesScalarLoopsBitForBit) {
  for (const Case& k : kCases)
    check_rows<float>(k, values(k.rows * k.C, 1), values(k.rows * k.C, 2));
}

// Both ways of rounding where the CPU has VCVTNEPS2BF16 (the integer way alone elsewhere).
TEST(NormRows, Bfloat16MatchesScalarLoopsBitForBit) {
  const bool native = avx512::native_bf16_rounding();
  for (bool allow : {true, false}) {
    avx512::allow_native_bf16_rounding(allow);
    for (const Case& k : kCases)
      check_rows<uint16_t>(k, to_bf16(values(k.rows * k.C, 3)), to_bf16(values(k.rows * k.C, 4)));
  }
  avx512::allow_native_bf16_rounding(native);
}

}  // namespace
}  // namespace keras::cpu
