// Vectorised bfloat16 <-> float32 conversions of whole arrays, one clone per ISA (AVX-512, AVX2,
// baseline), for the CPU kernels of two-byte tensors. Element by element they are
// float_to_bfloat16 / bfloat16_to_float of backend/half.h.
#pragma once
#include <cstdint>
#include <type_traits>

#include "backend/half.h"

namespace keras::cpu {

// A value stored as S (float, double, or uint16_t: bfloat16 bits) read as a T, and a T stored
// as S (rounded to nearest even for bfloat16): the loads and stores of kernels templated on
// the storage type.
template <class T, class S>
inline T widen(S v) {
  if constexpr (std::is_same_v<S, uint16_t>) return static_cast<T>(bfloat16_to_float(v));
  else return static_cast<T>(v);
}
template <class S, class T>
inline S narrow(T v) {
  if constexpr (std::is_same_v<S, uint16_t>) return float_to_bfloat16(static_cast<float>(v));
  else return static_cast<S>(v);
}

// d[i] = float_to_bfloat16(s[i]) / bfloat16_to_float(s[i]) for i < n (no threads; callers split
// the work).
void floats_to_bf16(const float* s, uint16_t* d, int64_t n);
void bf16_to_floats(const uint16_t* s, float* d, int64_t n);

}  // namespace keras::cpu
