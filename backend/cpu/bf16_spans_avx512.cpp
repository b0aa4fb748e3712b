// backend/cpu/bf16_spans_avx512.h: sixteen elements a step, the tail masked.
#include "backend/cpu/bf16_spans_avx512.h"

#include <immintrin.h>

#include "backend/cpu/bf16_round_avx512.h"

namespace keras::cpu::avx512 {

bool bf16_spans_available() { return native_bf16_rounding(); }

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")

namespace {

template <Bf16Op kOp, Bf16Keep kKeep>
void span(const uint16_t* a, const uint16_t* b, const uint16_t* y, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lanes(n - i);
    const __m512 va = bf16_widen(_mm256_maskz_loadu_epi16(k, a + i));
    const __m512 vb = bf16_widen(_mm256_maskz_loadu_epi16(k, b + i));
    __m512 v;
    if constexpr (kOp == Bf16Op::add) v = _mm512_add_ps(va, vb);
    else if constexpr (kOp == Bf16Op::subtract) v = _mm512_sub_ps(va, vb);
    else v = _mm512_mul_ps(va, vb);
    __m256i s = bf16_round<true>(v);
    if constexpr (kKeep == Bf16Keep::positive_or_nan) {
      s = _mm256_maskz_mov_epi16(bf16_relu_keeps(s), s);
    } else if constexpr (kKeep == Bf16Keep::where_y_positive) {
      s = _mm256_maskz_mov_epi16(bf16_positive_lanes(_mm256_maskz_loadu_epi16(k, y + i)), s);
    }
    _mm256_mask_storeu_epi16(out + i, k, s);
  }
}

template <Bf16Op kOp>
void span_keeping(Bf16Keep keep, const uint16_t* a, const uint16_t* b, const uint16_t* y, uint16_t* out, int64_t n) {
  switch (keep) {
    case Bf16Keep::all: return span<kOp, Bf16Keep::all>(a, b, y, out, n);
    case Bf16Keep::positive_or_nan: return span<kOp, Bf16Keep::positive_or_nan>(a, b, y, out, n);
    case Bf16Keep::where_y_positive: return span<kOp, Bf16Keep::where_y_positive>(a, b, y, out, n);
  }
}

}  // namespace

void bf16_binary_span(Bf16Op op, Bf16Keep keep, const uint16_t* a, const uint16_t* b, const uint16_t* y,
                      uint16_t* out, int64_t n) {
  switch (op) {
    case Bf16Op::add: return span_keeping<Bf16Op::add>(keep, a, b, y, out, n);
    case Bf16Op::subtract: return span_keeping<Bf16Op::subtract>(keep, a, b, y, out, n);
    case Bf16Op::multiply: return span_keeping<Bf16Op::multiply>(keep, a, b, y, out, n);
  }
}

void bf16_round_span(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lanes(n - i);
    _mm256_mask_storeu_epi16(d + i, k, bf16_round<true>(_mm512_maskz_loadu_ps(k, s + i)));
  }
}

#pragma GCC pop_options

}  // namespace keras::cpu::avx512
