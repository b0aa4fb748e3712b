// The element-wise bfloat16 loops between a mixed_bfloat16 convnet's convolutions (add, subtract,
// multiply, add_relu, add_relu_grad, and the rounding of float32 arrays) in AVX-512 intrinsics with
// AVX512-BF16's rounding: GCC's vectorised clones of the plain loops round the integer way, ~15
// cycles per 16 elements on a Zen 4 against ~5 here. The same bits as the plain loops (float32
// arithmetic, one rounding to nearest even, NaN quieted).
#pragma once
#include <cstdint>

namespace keras::cpu::avx512 {

// True where the spans below may be called: the CPU has AVX512-BF16's rounding and it is allowed
// (bf16_round_avx512.h's native_bf16_rounding()).
bool bf16_spans_available();

enum class Bf16Op { add, subtract, multiply };
enum class Bf16Keep {
  all,               // out = s
  positive_or_nan,   // relu(s): s where it is above +0 or a NaN, else +0
  where_y_positive,  // relu_grad(s, y): s where y is above +0 and no NaN, else +0
};

// out[i] = s kept as `keep` says, s = float_to_bfloat16(a[i] op b[i]), for i < n; all bfloat16
// bits; y is read only for where_y_positive. No threads (callers split the work).
// Precondition: bf16_spans_available().
void bf16_binary_span(Bf16Op op, Bf16Keep keep, const uint16_t* a, const uint16_t* b, const uint16_t* y,
                      uint16_t* out, int64_t n);

// d[i] = float_to_bfloat16(s[i]) for i < n (bf16_convert.h's floats_to_bf16 calls it).
// Precondition: bf16_spans_available().
void bf16_round_span(const float* s, uint16_t* d, int64_t n);

}  // namespace keras::cpu::avx512
