// The row loops of norm_rows.h in AVX-512 intrinsics, sixteen channels a vector (the tail masked),
// for float32 and bfloat16 activations. GCC's vectorised clones of the plain loops set up a
// runtime-length loop per row and, for bfloat16, converted in 256-bit halves: at C = 16 the
// backward's bfloat16 dx pass ran at 2 cycles an element, this code at under 1 (memory-bound).
// Every result is bit-identical to the plain loops: the same operations in the same order, no
// fused multiply-adds (the file is compiled with -ffp-contract=off, since GCC may fuse the
// intrinsics' products and sums), float_to_bfloat16's rounding and NaN quieting.
#include "backend/cpu/norm_rows_avx512.h"
#include "backend/cpu/cpu_isa.h"

#include <immintrin.h>

#include <algorithm>


namespace keras::cpu::avx512 {

bool rows_available() { return isa_allows_avx512(); }

// Everything below runs only where rows_available().
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")

namespace {

inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

inline __m512 load(const float* p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }
inline __m512 load(const uint16_t* p, __mmask16 k) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

inline void store(float* p, __m512 v, __mmask16 k) { _mm512_mask_storeu_ps(p, k, v); }
// float_to_bfloat16 of backend/half.h, sixteen at a time (the bits in each 32-bit lane's low half).
inline __m512i bf16_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
}
inline void store(uint16_t* p, __m512 v, __mmask16 k) {
  _mm256_mask_storeu_epi16(p, k, _mm512_cvtepi32_epi16(bf16_bits(v)));
}

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
    store(s1 + c0 + 16 * j, a1[j], k[j]);
    store(s2 + c0 + 16 * j, a2[j], k[j]);
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

template <class S>
inline void moments(const S* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  channel_sums(rows, C, s1, s2, [&](int64_t i, int64_t c, __mmask16 k, __m512& a1, __m512& a2) {
    const __m512 d = _mm512_sub_ps(load(x + i, k), load(shift + c, k));
    a1 = _mm512_add_ps(a1, d);
    a2 = _mm512_add_ps(a2, _mm512_mul_ps(d, d));
  });
}

template <class S>
inline void affine(const S* x, S* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu,
                                float hi) {
  const __m512 vhi = _mm512_set1_ps(hi);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 k = lanes(C - c);
      const int64_t i = m * C + c;
      const __m512 v = _mm512_add_ps(_mm512_mul_ps(load(x + i, k), load(a + c, k)), load(b + c, k));
      if (!relu) {
        store(y + i, v, k);
        continue;
      }
      // v > 0 ? min(v, hi) : 0, and NaN stays NaN
      __m512 t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, vhi, _CMP_LT_OQ), vhi, v);
      t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), t);
      t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
      store(y + i, t, k);
    }
}

// Rounds to S and back: identity for float32, bfloat16's rounding (store's) for uint16_t.
inline __m512 as_stored(__m512 v, const float*) { return v; }
inline __m512 as_stored(__m512 v, const uint16_t*) { return _mm512_castsi512_ps(_mm512_slli_epi32(bf16_bits(v), 16)); }

template <class S>
inline void affine_add_relu(const S* x, const S* r, S* z, int64_t rows, int64_t C, const float* a, const float* b) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 k = lanes(C - c);
      const int64_t i = m * C + c;
      const __m512 y = as_stored(_mm512_add_ps(_mm512_mul_ps(load(x + i, k), load(a + c, k)), load(b + c, k)), x);
      const __m512 v = as_stored(_mm512_add_ps(y, load(r + i, k)), x);
      // v > 0 or NaN: v, else 0
      const __mmask16 keep =
          _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      store(z + i, _mm512_maskz_mov_ps(keep, v), k);
    }
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

template <class S>
inline void grad_dx(const S* g, const S* x, S* dx, int64_t rows, int64_t C, const float* A,
                                 const float* B, const float* K, ReluRows relu) {
  const __m512 vhi = _mm512_set1_ps(relu.hi);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 k = lanes(C - c);
      const int64_t i = m * C + c;
      const __m512 xv = load(x + i, k);
      __m512 gm = load(g + i, k);
      if (relu.a) gm = window(gm, xv, load(relu.a + c, k), load(relu.b + c, k), vhi);
      const __m512 r =
          _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(load(A + c, k), gm), _mm512_mul_ps(load(B + c, k), xv)), load(K + c, k));
      store(dx + i, r, k);
    }
}

}  // namespace

void moment_rows(const float* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  moments(x, rows, C, shift, s1, s2);
}
void moment_rows(const uint16_t* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  moments(x, rows, C, shift, s1, s2);
}
void affine_rows(const float* x, float* y, int64_t rows, int64_t C, const float* a, const float* b,
                              bool relu, float hi) {
  affine(x, y, rows, C, a, b, relu, hi);
}
void affine_rows(const uint16_t* x, uint16_t* y, int64_t rows, int64_t C, const float* a, const float* b,
                              bool relu, float hi) {
  affine(x, y, rows, C, a, b, relu, hi);
}
void affine_add_relu_rows(const float* x, const float* r, float* z, int64_t rows, int64_t C, const float* a,
                          const float* b) {
  affine_add_relu(x, r, z, rows, C, a, b);
}
void affine_add_relu_rows(const uint16_t* x, const uint16_t* r, uint16_t* z, int64_t rows, int64_t C, const float* a,
                          const float* b) {
  affine_add_relu(x, r, z, rows, C, a, b);
}
void grad_sum_rows(const float* g, const float* x, int64_t rows, int64_t C, const float* mu,
                                ReluRows relu, float* s1, float* s2) {
  grad_sum(g, x, rows, C, mu, relu, s1, s2);
}
void grad_sum_rows(const uint16_t* g, const uint16_t* x, int64_t rows, int64_t C, const float* mu,
                                ReluRows relu, float* s1, float* s2) {
  grad_sum(g, x, rows, C, mu, relu, s1, s2);
}
void grad_dx_rows(const float* g, const float* x, float* dx, int64_t rows, int64_t C, const float* A,
                               const float* B, const float* K, ReluRows relu) {
  grad_dx(g, x, dx, rows, C, A, B, K, relu);
}
void grad_dx_rows(const uint16_t* g, const uint16_t* x, uint16_t* dx, int64_t rows, int64_t C,
                               const float* A, const float* B, const float* K, ReluRows relu) {
  grad_dx(g, x, dx, rows, C, A, B, K, relu);
}

#pragma GCC pop_options

}  // namespace keras::cpu::avx512
