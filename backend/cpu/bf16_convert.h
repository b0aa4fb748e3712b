// Vectorised bfloat16 <-> float32 conversions for the CPU kernels of two-byte tensors.
//
// bf16_round is float_to_bfloat16 (backend/half.h: round to nearest even, a NaN stays a quiet
// NaN) written without a branch, so that loops of it vectorise; the two agree on every float.
// The array forms run AVX-512, AVX2 or baseline code, whichever the CPU has.
#pragma once
#include <cstdint>
#include <cstring>

namespace keras::cpu {

inline float bf16_load(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t bf16_round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  // Signed compare of the magnitude (never negative as int32): it vectorises where the unsigned
  // one would not on the baseline ISA.
  const bool nan = static_cast<int32_t>(u & 0x7fffffffu) > static_cast<int32_t>(0x7f800000u);
  return static_cast<uint16_t>(nan ? quiet_nan : rounded);
}

// d[i] = bf16_round(s[i]) / bf16_load(s[i]) for i < n (no threads; callers split the work).
void floats_to_bf16(const float* s, uint16_t* d, int64_t n);
void bf16_to_floats(const uint16_t* s, float* d, int64_t n);

}  // namespace keras::cpu
