// The row loops of norm_rows.h in AVX-512 intrinsics, sixteen channels a vector (the tail masked),
// for float32 and bfloat16 activations. GCC's vectorised clones of the plain loops set up a
// runtime-length loop per row and, for bfloat16, converted in 256-bit halves: at C = 16 the
// backward's bfloat16 dx pass ran at 2 cycles an element, this code at under 1. On a Zen 4, whose
// 512-bit operations take two cycles, the passes were then bound by instruction count, not
// memory: bfloat16 results rounded by VCVTNEPS2BF16 (bf16_round_avx512.h) and the per-channel
// factors kept in registers across rows halved the forward passes' time (0.154 -> 0.077 ms for
// 512K elements, one thread, C = 16) and took a third off the backward's dx pass.
// Every result is bit-identical to the plain loops: the same operations in the same order, no
// fused multiply-adds (the file is compiled with -ffp-contract=off, since GCC may fuse the
// intrinsics' products and sums), float_to_bfloat16's rounding and NaN quieting.
#include "backend/cpu/norm_rows_avx512.h"

#include "backend/cpu/bf16_round_avx512.h"
#include "backend/cpu/cpu_isa.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>


namespace keras::cpu::avx512 {

bool rows_available() { return isa_allows_avx512(); }

// Everything below runs only where rows_available(), the kNative code only where
// native_bf16_rounding() (GCC 12 emits AVX512-BF16 instructions only for their intrinsics).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")

namespace {

inline __m512 load(const float* p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }
inline __m512 load(const uint16_t* p, __mmask16 k) { return bf16_widen(_mm256_maskz_loadu_epi16(k, p)); }

template <bool kNative>
inline void store(float* p, __m512 v, __mmask16 k) { _mm512_mask_storeu_ps(p, k, v); }
template <bool kNative>
inline void store(uint16_t* p, __m512 v, __mmask16 k) { _mm256_mask_storeu_epi16(p, k, bf16_round<kNative>(v)); }

// Rounds to S and back: identity for float32, bfloat16's rounding (store's) for uint16_t.
template <bool kNative>
inline __m512 as_stored(__m512 v, const float*) { return v; }
template <bool kNative>
inline __m512 as_stored(__m512 v, const uint16_t*) {
  return bf16_widen(bf16_round<kNative>(v));
}

// v where v > 0 or v is NaN, else +0: one compare ("not less or equal" holds for NaN).
inline __m512 relu(__m512 v) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NLE_UQ), v); }

// The fused ReLU's window: g where 0 < x * a + b < hi, else 0 (norm_rows.cpp's `window`).
inline __m512 window(__m512 g, __m512 x, __m512 a, __m512 b, __m512 hi) {
  const __m512 y = _mm512_add_ps(_mm512_mul_ps(x, a), b);
  const __mmask16 pass = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ) & _mm512_cmp_ps_mask(y, hi, _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(pass, g);
}

// The per-channel sums walk the rows in order, up to four vectors of channels at a time with
// their accumulators in registers (reading rows whole: blocks of channels read one after the
// other, with a stride of a row, ran slower at C = 64).
template <int NB, class F>
inline void sum_rows(int64_t rows, int64_t C, int64_t c0, float* s1, float* s2, F&& term) {
  __mmask16 k[NB];
  __m512 a1[NB], a2[NB];
  for (int j = 0; j < NB; ++j) {
    k[j] = lanes(C - c0 - 16 * j);
    a1[j] = load(s1 + c0 + 16 * j, k[j]);
    a2[j] = load(s2 + c0 + 16 * j, k[j]);
  }
  for (int64_t m = 0; m < rows; ++m)
    for (int j = 0; j < NB; ++j) term(m * C + c0 + 16 * j, c0 + 16 * j, k[j], a1[j], a2[j]);
  for (int j = 0; j < NB; ++j) {
    store<false>(s1 + c0 + 16 * j, a1[j], k[j]);
    store<false>(s2 + c0 + 16 * j, a2[j], k[j]);
  }
}

// term(i, c, k, a1, a2) adds the terms of element i (channel c, lanes k) into a1 and a2.
template <class F>
inline void channel_sums(int64_t rows, int64_t C, float* s1, float* s2, F&& term) {
  for (int64_t c0 = 0; c0 < C; c0 += 64) {
    const int64_t blocks = (std::min<int64_t>(C - c0, 64) + 15) / 16;
    if (blocks == 4) sum_rows<4>(rows, C, c0, s1, s2, term);
    else if (blocks == 3) sum_rows<3>(rows, C, c0, s1, s2, term);
    else if (blocks == 2) sum_rows<2>(rows, C, c0, s1, s2, term);
    else sum_rows<1>(rows, C, c0, s1, s2, term);
  }
}

// The element-wise passes walk the rows the same way, up to four vectors of channels a row with
// their P per-channel factors and lane masks in registers: at C = 16 the loop per row reloading
// them (and recomputing the mask) took half the time. body(i, k, f) writes element i, f[q] the
// factor of params[q] for its lanes.
template <int NB, int P, class F>
inline void map_block(int64_t rows, int64_t C, int64_t c0, const float* const (&params)[P], F&& body) {
  __mmask16 k[NB];
  __m512 f[NB][P];
  for (int j = 0; j < NB; ++j) {
    k[j] = lanes(C - c0 - 16 * j);
    for (int q = 0; q < P; ++q) f[j][q] = load(params[q] + c0 + 16 * j, k[j]);
  }
#pragma GCC unroll 4
  for (int64_t m = 0; m < rows; ++m)
    for (int j = 0; j < NB; ++j) body(m * C + c0 + 16 * j, k[j], f[j]);
}

template <int P, class F>
inline void map_rows(int64_t rows, int64_t C, const float* const (&params)[P], F&& body) {
  for (int64_t c0 = 0; c0 < C; c0 += 64) {
    const int64_t blocks = (std::min<int64_t>(C - c0, 64) + 15) / 16;
    if (blocks == 4) map_block<4>(rows, C, c0, params, body);
    else if (blocks == 3) map_block<3>(rows, C, c0, params, body);
    else if (blocks == 2) map_block<2>(rows, C, c0, params, body);
    else map_block<1>(rows, C, c0, params, body);
  }
}

template <class S>
inline void moments(const S* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  channel_sums(rows, C, s1, s2, [&](int64_t i, int64_t c, __mmask16 k, __m512& a1, __m512& a2) {
    const __m512 d = _mm512_sub_ps(load(x + i, k), load(shift + c, k));
    a1 = _mm512_add_ps(a1, d);
    a2 = _mm512_add_ps(a2, _mm512_mul_ps(d, d));
  });
}

template <bool kNative, class S>
inline void affine(const S* x, S* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu_on, float hi) {
  const __m512 vhi = _mm512_set1_ps(hi);
  const float* const params[2] = {a, b};
  map_rows(rows, C, params, [&](int64_t i, __mmask16 k, const __m512* f) {
    const __m512 v = _mm512_add_ps(_mm512_mul_ps(load(x + i, k), f[0]), f[1]);
    // min(hi, v) is v where v is NaN (MINPS returns its second operand then)
    store<kNative>(y + i, relu_on ? relu(_mm512_min_ps(vhi, v)) : v, k);
  });
}

// For bfloat16 the sum is rounded once and its ReLU taken on the bits (a bfloat16 is kept where
// it is positive as an int16 or a NaN), where rounding, widening, ReLU and rounding again cost
// twice the instructions.
template <bool kNative, class S>
inline void affine_add_relu(const S* x, const S* r, S* z, int64_t rows, int64_t C, const float* a, const float* b) {
  const float* const params[2] = {a, b};
  map_rows(rows, C, params, [&](int64_t i, __mmask16 k, const __m512* f) {
    const __m512 y = as_stored<kNative>(_mm512_add_ps(_mm512_mul_ps(load(x + i, k), f[0]), f[1]), x);
    const __m512 sum = _mm512_add_ps(y, load(r + i, k));
    if constexpr (std::is_same_v<S, float>) {
      store<kNative>(z + i, relu(sum), k);
    } else {
      const __m256i v = bf16_round<kNative>(sum);
      _mm256_mask_storeu_epi16(z + i, k, _mm256_maskz_mov_epi16(bf16_relu_keeps(v), v));
    }
  });
}

template <class S>
inline void grad_sum(const S* g, const S* x, int64_t rows, int64_t C, const float* mu, ReluRows relu,
                                  float* s1, float* s2) {
  const __m512 vhi = _mm512_set1_ps(relu.hi);
  channel_sums(rows, C, s1, s2, [&](int64_t i, int64_t c, __mmask16 k, __m512& a1, __m512& a2) {
    const __m512 xv = load(x + i, k);
    __m512 gm = load(g + i, k);
    if (relu.a) gm = window(gm, xv, load(relu.a + c, k), load(relu.b + c, k), vhi);
    a1 = _mm512_add_ps(a1, gm);
    a2 = _mm512_add_ps(a2, _mm512_mul_ps(gm, _mm512_sub_ps(xv, load(mu + c, k))));
  });
}

template <bool kNative, class S>
inline void grad_dx(const S* g, const S* x, S* dx, int64_t rows, int64_t C, const float* A, const float* B,
                    const float* K, ReluRows relu) {
  const __m512 vhi = _mm512_set1_ps(relu.hi);
  auto dx_of = [&](int64_t i, __mmask16 k, __m512 gm, __m512 xv, const __m512* f) {
    const __m512 r = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(f[0], gm), _mm512_mul_ps(f[1], xv)), f[2]);
    store<kNative>(dx + i, r, k);
  };
  if (relu.a) {
    const float* const params[5] = {A, B, K, relu.a, relu.b};
    map_rows(rows, C, params, [&](int64_t i, __mmask16 k, const __m512* f) {
      const __m512 xv = load(x + i, k);
      dx_of(i, k, window(load(g + i, k), xv, f[3], f[4], vhi), xv, f);
    });
  } else {
    const float* const params[3] = {A, B, K};
    map_rows(rows, C, params,
             [&](int64_t i, __mmask16 k, const __m512* f) { dx_of(i, k, load(g + i, k), load(x + i, k), f); });
  }
}

}  // namespace

void moment_rows(const float* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  moments(x, rows, C, shift, s1, s2);
}
void moment_rows(const uint16_t* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  moments(x, rows, C, shift, s1, s2);
}
void affine_rows(const float* x, float* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu,
                 float hi) {
  affine<false>(x, y, rows, C, a, b, relu, hi);
}
void affine_rows(const uint16_t* x, uint16_t* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu,
                 float hi) {
  if (native_bf16_rounding()) return affine<true>(x, y, rows, C, a, b, relu, hi);
  affine<false>(x, y, rows, C, a, b, relu, hi);
}
void affine_add_relu_rows(const float* x, const float* r, float* z, int64_t rows, int64_t C, const float* a,
                          const float* b) {
  affine_add_relu<false>(x, r, z, rows, C, a, b);
}
void affine_add_relu_rows(const uint16_t* x, const uint16_t* r, uint16_t* z, int64_t rows, int64_t C, const float* a,
                          const float* b) {
  if (native_bf16_rounding()) return affine_add_relu<true>(x, r, z, rows, C, a, b);
  affine_add_relu<false>(x, r, z, rows, C, a, b);
}
void grad_sum_rows(const float* g, const float* x, int64_t rows, int64_t C, const float* mu, ReluRows relu, float* s1,
                   float* s2) {
  grad_sum(g, x, rows, C, mu, relu, s1, s2);
}
void grad_sum_rows(const uint16_t* g, const uint16_t* x, int64_t rows, int64_t C, const float* mu, ReluRows relu,
                   float* s1, float* s2) {
  grad_sum(g, x, rows, C, mu, relu, s1, s2);
}
void grad_dx_rows(const float* g, const float* x, float* dx, int64_t rows, int64_t C, const float* A, const float* B,
                  const float* K, ReluRows relu) {
  grad_dx<false>(g, x, dx, rows, C, A, B, K, relu);
}
void grad_dx_rows(const uint16_t* g, const uint16_t* x, uint16_t* dx, int64_t rows, int64_t C, const float* A,
                  const float* B, const float* K, ReluRows relu) {
  if (native_bf16_rounding()) return grad_dx<true>(g, x, dx, rows, C, A, B, K, relu);
  grad_dx<false>(g, x, dx, rows, C, A, B, K, relu);
}

#pragma GCC pop_options

}  // namespace keras::cpu::avx512
