// The bfloat16 row loops of norm_rows.h in AVX-512 intrinsics, sixteen channels a vector (the
// tail masked). GCC's vectorised clones of the plain loops spent most of their time converting
// between bfloat16 and float32 in 256-bit halves and setting up a runtime-length loop per row:
// at C = 16 the backward's dx pass ran at 2 cycles an element, these at under 1 (memory-bound).
// Every result is bit-identical to the plain loops: the same operations in the same order, no
// fused multiply-adds, float_to_bfloat16's rounding and NaN quieting.
#include "backend/cpu/norm_rows_avx512.h"

#include <immintrin.h>

#define KERAS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace keras::cpu::avx512 {
namespace {

KERAS_AVX512 inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

KERAS_AVX512 inline __m512 load_bf16(const uint16_t* p, __mmask16 k) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// float_to_bfloat16 of backend/half.h, sixteen at a time.
KERAS_AVX512 inline void store_bf16(uint16_t* p, __m512 v, __mmask16 k) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
  _mm256_mask_storeu_epi16(p, k, _mm512_cvtepi32_epi16(r));
}

KERAS_AVX512 inline __m512 load_f(const float* p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }

// The fused ReLU's window: g where 0 < x * a + b < hi, else 0 (norm_rows.cpp's `window`).
KERAS_AVX512 inline __m512 window(__m512 g, __m512 x, __m512 a, __m512 b, __m512 hi) {
  const __m512 y = _mm512_add_ps(_mm512_mul_ps(x, a), b);
  const __mmask16 pass = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ) & _mm512_cmp_ps_mask(y, hi, _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(pass, g);
}

}  // namespace

bool bf16_rows_available() {
  static const bool ok =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return ok;
}

KERAS_AVX512 void moment_rows(const uint16_t* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 k = lanes(C - c);
    const __m512 sh = load_f(shift + c, k);
    __m512 a1 = load_f(s1 + c, k), a2 = load_f(s2 + c, k);
    for (int64_t m = 0; m < rows; ++m) {
      const __m512 d = _mm512_sub_ps(load_bf16(x + m * C + c, k), sh);
      a1 = _mm512_add_ps(a1, d);
      a2 = _mm512_add_ps(a2, _mm512_mul_ps(d, d));
    }
    _mm512_mask_storeu_ps(s1 + c, k, a1);
    _mm512_mask_storeu_ps(s2 + c, k, a2);
  }
}

KERAS_AVX512 void affine_rows(const uint16_t* x, uint16_t* y, int64_t rows, int64_t C, const float* a, const float* b,
                              bool relu, float hi) {
  const __m512 vhi = _mm512_set1_ps(hi);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 k = lanes(C - c);
      const int64_t i = m * C + c;
      const __m512 v = _mm512_add_ps(_mm512_mul_ps(load_bf16(x + i, k), load_f(a + c, k)), load_f(b + c, k));
      if (!relu) {
        store_bf16(y + i, v, k);
        continue;
      }
      // v > 0 ? min(v, hi) : 0, and NaN stays NaN
      __m512 t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, vhi, _CMP_LT_OQ), vhi, v);
      t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), t);
      t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
      store_bf16(y + i, t, k);
    }
}

KERAS_AVX512 void grad_sum_rows(const uint16_t* g, const uint16_t* x, int64_t rows, int64_t C, const float* mu,
                                ReluRows relu, float* s1, float* s2) {
  const __m512 vhi = _mm512_set1_ps(relu.hi);
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 k = lanes(C - c);
    const __m512 vmu = load_f(mu + c, k);
    const __m512 ra = relu.a ? load_f(relu.a + c, k) : _mm512_setzero_ps();
    const __m512 rb = relu.a ? load_f(relu.b + c, k) : _mm512_setzero_ps();
    __m512 a1 = load_f(s1 + c, k), a2 = load_f(s2 + c, k);
    for (int64_t m = 0; m < rows; ++m) {
      const int64_t i = m * C + c;
      const __m512 xv = load_bf16(x + i, k);
      __m512 gm = load_bf16(g + i, k);
      if (relu.a) gm = window(gm, xv, ra, rb, vhi);
      a1 = _mm512_add_ps(a1, gm);
      a2 = _mm512_add_ps(a2, _mm512_mul_ps(gm, _mm512_sub_ps(xv, vmu)));
    }
    _mm512_mask_storeu_ps(s1 + c, k, a1);
    _mm512_mask_storeu_ps(s2 + c, k, a2);
  }
}

KERAS_AVX512 void grad_dx_rows(const uint16_t* g, const uint16_t* x, uint16_t* dx, int64_t rows, int64_t C,
                               const float* A, const float* B, const float* K, ReluRows relu) {
  const __m512 vhi = _mm512_set1_ps(relu.hi);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 k = lanes(C - c);
      const int64_t i = m * C + c;
      const __m512 xv = load_bf16(x + i, k);
      __m512 gm = load_bf16(g + i, k);
      if (relu.a) gm = window(gm, xv, load_f(relu.a + c, k), load_f(relu.b + c, k), vhi);
      const __m512 r = _mm512_add_ps(
          _mm512_add_ps(_mm512_mul_ps(load_f(A + c, k), gm), _mm512_mul_ps(load_f(B + c, k), xv)), load_f(K + c, k));
      store_bf16(dx + i, r, k);
    }
}

}  // namespace keras::cpu::avx512
