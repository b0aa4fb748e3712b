#include "backend/collectives/half_precision.h"

#include <cmath>
#include <cstring>

namespace keras::collectives {

float bfloat16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // keep it a quiet NaN
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal or zero
  else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
  else magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_float16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < 6.103515625e-05f) {                // subnormal: units of 2^-24, rounded to even
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  int exponent;
  const float m = std::frexp(a, &exponent);  // a = m * 2^exponent, m in [0.5, 1)
  // 11 significant bits: mantissa in units of 2^(exponent - 11), rounded to nearest even.
  uint32_t significand = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));
  if (significand == 2048) {
    significand = 1024;
    ++exponent;
  }
  if (exponent + 14 >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(((exponent + 14) << 10) | (significand & 0x3ff));
}

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
