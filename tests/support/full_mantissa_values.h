// Reproducible float32 operands for bit-exact kernel tests (shared by test_small_gemm and
// test_gemm_direct): values in [-3, 3] with full mantissas (multiples of 1/337), so that another
// summation order or a lost fused multiply-add changes low bits.
#pragma once
#include <cstdint>
#include <vector>

namespace keras::testing {

inline std::vector<float> full_mantissa_values(int64_t count, int seed) {
  std::vector<float> v(static_cast<size_t>(count));
  uint32_t s = static_cast<uint32_t>(seed) * 2654435761u + 1u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int32_t>(s >> 9) % 2001 - 1000) / 337.0f;
  }
  return v;
}

}  // namespace keras::testing
