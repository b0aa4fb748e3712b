// The problem the direct forward and input-gradient kernels share (conv_direct.cpp for AVX2,
// conv_direct_avx512.cpp for AVX-512): one NHWC float32 convolution with a Keras-layout kernel.
#pragma once
#include <cstdint>

namespace keras::cpu {

// out[n, oy, ox, o] = act(bias[o] + sum of in[n, oy * sh + kh * dh - pt, ox * sw + kw * dw - pl, c]
// * w[kh, kw, c, o]); act is the identity or relu. Taps in the padding count as zeros.
struct DirectConv {
  const float* in;
  int64_t n, ih, iw, ci;
  const float* w;  // (kh, kw, ci, co)
  int64_t kh, kw, sh, sw, dh, dw, pt, pl;
  const float* bias;  // co values, or null
  bool relu;
  float* out;
  int64_t oh, ow, co;
  const float* zeros;  // ci zeros
};

}  // namespace keras::cpu
