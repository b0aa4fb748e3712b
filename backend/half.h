// The bits of bfloat16 and float16, the two-byte floats of mixed precision, and their exact
// conversions to and from float32 (round to nearest even, NaN stays NaN, infinities and
// float16 subnormals kept). Tensors of these dtypes store uint16_t; arithmetic happens in float32.
#pragma once
#include <cstdint>
#include <cstring>

#include "backend/dtype.h"

namespace keras {

// float32 -> bfloat16: the top 16 bits, rounded to nearest even; a NaN stays a (quiet) NaN
// instead of rounding into infinity. Written without a branch so that loops of it vectorise (the
// CPU's bfloat16 kernels convert whole rows with it).
inline uint16_t float_to_bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  // Signed compare of the magnitude (never negative as int32): it vectorises where the unsigned
  // one does not on the baseline ISA.
  const bool nan = static_cast<int32_t>(u & 0x7fffffffu) > static_cast<int32_t>(0x7f800000u);
  return static_cast<uint16_t>(nan ? quiet_nan : rounded);
}

inline float bfloat16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float16 through the compiler's IEEE binary16 type (GCC 12+, Clang: F16C instructions where the
// build targets them, exact software conversions otherwise).
inline uint16_t float_to_float16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

inline float float16_to_float(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

// The conversions of a two-byte dtype `t` (bfloat16 or float16).
inline uint16_t half_from_float(DType t, float f) {
  return t == DType::bfloat16 ? float_to_bfloat16(f) : float_to_float16(f);
}
inline float half_to_float(DType t, uint16_t b) { return t == DType::bfloat16 ? bfloat16_to_float(b) : float16_to_float(b); }

}  // namespace keras
