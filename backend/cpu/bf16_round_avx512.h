// Rounding float32 to bfloat16 in AVX-512 registers, bit for bit as float_to_bfloat16 of
// backend/half.h, for the vectorised bfloat16 loops (norm_rows_avx512.cpp, bf16_spans_avx512.cpp).
// The vector functions are compiled for AVX-512 with AVX512-BF16: call them only from code
// compiled for the same (a `#pragma GCC target` region), on a CPU with AVX-512 (F, BW, VL), and
// bf16_round<true> only where native_bf16_rounding().
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/cpu_isa.h"

namespace keras::cpu::avx512 {

// True where bfloat16 results are rounded by VCVTNEPS2BF16 (the CPU has it: isa_allows_bf16()).
// For tests only, and never while kernels run (threads read it unguarded):
// allow_native_bf16_rounding(false) makes the batch-norm rows round the integer way and the
// bf16_spans_avx512.h loops unavailable (their callers' plain loops run), true restores the
// instruction where the CPU has it.
inline bool& native_bf16_rounding_switch() {
  static bool on = isa_allows_bf16();
  return on;
}
inline bool native_bf16_rounding() { return native_bf16_rounding_switch(); }
inline void allow_native_bf16_rounding(bool allow) { native_bf16_rounding_switch() = allow && isa_allows_bf16(); }

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")

// float_to_bfloat16 of sixteen lanes, the bits in each 32-bit lane's low half.
inline __m512i bf16_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
}

// The same sixteen bfloat16, packed. VCVTNEPS2BF16 rounds as float_to_bfloat16 (to nearest even,
// a NaN quieted the same way) in one instruction where bf16_bits takes eight and a narrowing, but
// flushes subnormal inputs to zero: those lanes, rare, are redone the integer way.
template <bool kNative>
inline __m256i bf16_round(__m512 v) {
  if constexpr (!kNative) {
    return _mm512_cvtepi32_epi16(bf16_bits(v));
  } else {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 subnormal = _mm512_mask_test_epi32_mask(
        _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000)), u, _mm512_set1_epi32(0x007fffff));
    const __m256i r = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    if (__builtin_expect(subnormal == 0, 1)) return r;
    return _mm256_mask_mov_epi16(r, subnormal, _mm512_cvtepi32_epi16(bf16_bits(v)));
  }
}

// Sixteen bfloat16 as float32 (exact).
inline __m512 bf16_widen(__m256i b) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16)); }

// The first n of sixteen lanes (all for n >= 16): the mask of a loop's tail.
inline __mmask16 lanes(int64_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1u); }

// Lanes of sixteen bfloat16 above +0 and no NaN (cpu::bf16_positive of bf16_bits.h).
inline __mmask16 bf16_positive_lanes(__m256i b) {
  return _mm256_cmpgt_epi16_mask(b, _mm256_setzero_si256()) & _mm256_cmple_epi16_mask(b, _mm256_set1_epi16(0x7f80));
}

// Lanes of sixteen bfloat16 that ReLU keeps: positive as an int16 (above +0, +infinity included)
// or a NaN of either sign.
inline __mmask16 bf16_relu_keeps(__m256i b) {
  return _mm256_cmpgt_epi16_mask(b, _mm256_setzero_si256()) |
         _mm256_cmpgt_epi16_mask(_mm256_and_si256(b, _mm256_set1_epi16(0x7fff)), _mm256_set1_epi16(0x7f80));
}

#pragma GCC pop_options

}  // namespace keras::cpu::avx512
