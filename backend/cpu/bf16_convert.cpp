// backend/cpu/bf16_convert.h: the array conversions, one clone per ISA.
#include "backend/cpu/bf16_convert.h"

#include "backend/cpu/bf16_spans_avx512.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/half.h"

namespace keras::cpu {

KERAS_ISA_CLONES void floats_to_bf16(const float* __restrict s, uint16_t* __restrict d, int64_t n) {
  if (avx512::bf16_spans_available()) return avx512::bf16_round_span(s, d, n);
  for (int64_t i = 0; i < n; ++i) d[i] = float_to_bfloat16(s[i]);
}

KERAS_ISA_CLONES void bf16_to_floats(const uint16_t* __restrict s, float* __restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = bfloat16_to_float(s[i]);
}

}  // namespace keras::cpu
