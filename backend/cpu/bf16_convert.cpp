// backend/cpu/bf16_convert.h: the array conversions, one clone per ISA.
#include "backend/cpu/bf16_convert.h"

namespace keras::cpu {

__attribute__((target_clones("avx512f", "avx2", "default"))) void floats_to_bf16(const float* __restrict s,
                                                                                  uint16_t* __restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = bf16_round(s[i]);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void bf16_to_floats(const uint16_t* __restrict s,
                                                                                  float* __restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = bf16_load(s[i]);
}

// Narrowing float32 lanes to 16 bits needs more than the baseline ISA to vectorise; hence the
// clones (the baseline version runs scalar).
__attribute__((target_clones("avx512f", "avx2", "default"))) void affine_rows_bf16(
    const uint16_t* __restrict x, uint16_t* __restrict y, int64_t M, int64_t C, const float* __restrict a,
    const float* __restrict b, bool relu, float hi) {
  for (int64_t m = 0; m < M; ++m) {
    const uint16_t* __restrict xr = x + m * C;
    uint16_t* __restrict yr = y + m * C;
    if (relu) {
      for (int64_t c = 0; c < C; ++c) {
        const float v = bf16_load(xr[c]) * a[c] + b[c];
        const float clamped = v > 0.f ? (v < hi ? v : hi) : 0.f;
        yr[c] = bf16_round(v != v ? v : clamped);
      }
    } else {
      for (int64_t c = 0; c < C; ++c) yr[c] = bf16_round(bf16_load(xr[c]) * a[c] + b[c]);
    }
  }
}

}  // namespace keras::cpu
