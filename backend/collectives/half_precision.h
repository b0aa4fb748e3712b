// float16 and bfloat16 as 16-bit storage: conversions to and from float32 (round to nearest
// even; NaN stays NaN), and the element-wise sum the collectives reduce them with.
#pragma once
#include <cstddef>
#include <cstdint>

namespace keras::collectives {

float bfloat16_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float float16_to_float(uint16_t h);
uint16_t float_to_float16(float f);

// inout[i] = round(in[i] + inout[i]), computed in float32.
void add_bfloat16(const uint16_t* in, uint16_t* inout, size_t n);
void add_float16(const uint16_t* in, uint16_t* inout, size_t n);
// data[i] = round(data[i] * factor).
void scale_bfloat16(uint16_t* data, size_t n, float factor);
void scale_float16(uint16_t* data, size_t n, float factor);

}  // namespace keras::collectives
