// float16 and bfloat16 as 16-bit storage in the collectives: the element-wise sum they reduce
// them with, and scaling (the conversions are backend/half.h's).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/half.h"

namespace keras::collectives {

// inout[i] = round(in[i] + inout[i]), computed in float32.
void add_bfloat16(const uint16_t* in, uint16_t* inout, size_t n);
void add_float16(const uint16_t* in, uint16_t* inout, size_t n);
// data[i] = round(data[i] * factor).
void scale_bfloat16(uint16_t* data, size_t n, float factor);
void scale_float16(uint16_t* data, size_t n, float factor);

}  // namespace keras::collectives
