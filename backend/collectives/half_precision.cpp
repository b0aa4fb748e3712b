#include "backend/collectives/half_precision.h"

#include <cmath>
#include <cstring>

namespace keras::collectives {

void add_bfloat16(const uint16_t* in, uint16_t* inout, size_t n) {
  for (size_t i = 0; i < n; ++i) inout[i] = float_to_bfloat16(bfloat16_to_float(in[i]) + bfloat16_to_float(inout[i]));
}

void add_float16(const uint16_t* in, uint16_t* inout, size_t n) {
  for (size_t i = 0; i < n; ++i) inout[i] = float_to_float16(float16_to_float(in[i]) + float16_to_float(inout[i]));
}

void scale_bfloat16(uint16_t* data, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) data[i] = float_to_bfloat16(bfloat16_to_float(data[i]) * factor);
}

void scale_float16(uint16_t* data, size_t n, float factor) {
  for (size_t i = 0; i < n; ++i) data[i] = float_to_float16(float16_to_float(data[i]) * factor);
}

}  // namespace keras::collectives
