// Internals shared by the Winograd F(2x2, 3x3) kernels (conv_winograd.cpp: forward and input
// gradient; conv_winograd_weights.cpp: weight gradient): how the output is cut into 2x2 tiles,
// the blocks of tiles, and the input transform V = B^T d B with
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/conv_direct.h"
#include "backend/cpu/small_gemm.h"
#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu::winograd {

// A convolution's input x (N, H, W, C) and output extents (OH, OW) with its top and left
// padding, cut into 2x2 output tiles numbered image by image, row by row. Tile (ty, tx) reads
// the 4x4 input patch from row 2 * ty - pt, column 2 * tx - pl (zeros outside x).
struct Tiling {
  const float* x;
  int64_t n, h, w, c;
  int64_t oh, ow;
  int64_t pt, pl;
  int64_t th() const { return (oh + 1) / 2; }
  int64_t tw() const { return (ow + 1) / 2; }
  int64_t tiles() const { return n * th() * tw(); }
};

// 3x3 kernel, strides and dilations 1, one group, channels in whole vectors and at most
// kDirectMaxChannels (wider layers are oneDNN's, and they would make the transformed kernel and
// the weight gradient's partial sums large), pads of 0 to 2 (a pad p of the forward pass is
// 2 - p in the input gradient's), AVX2 present and allowed.
inline bool shape_fits(const Shape& ks, const ConvParams& p) {
  auto pad_ok = [](int64_t pad) { return pad >= 0 && pad <= 2; };
  auto channels_ok = [](int64_t c) { return c > 0 && c % 8 == 0 && c <= kDirectMaxChannels; };
  return conv_direct_available() && small_gemm_available() && ks.size() == 4 && ks[0] == 3 && ks[1] == 3 &&
         channels_ok(ks[2]) && channels_ok(ks[3]) && p.groups == 1 && p.stride_h == 1 &&
         p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1 && pad_ok(p.pad_top) && pad_ok(p.pad_bottom) &&
         pad_ok(p.pad_left) && pad_ok(p.pad_right);
}

// Tiles per block: a block's two transformed operands (16 planes of `in` and of `out` channels)
// take about 512 KiB, in L2 beside the transformed weights.
inline int64_t block_capacity(int64_t in, int64_t out) {
  return std::clamp<int64_t>((512 << 10) / (16 * 4 * (in + out)), 12, 512);
}

// The distance between two positions' planes of V (or M) holding `rows` rows of `width`: one
// cache line more than the rows need, so that the 16 planes do not fall into the same L1 sets
// (with 4 KiB-multiple planes the 16 stores of a tile evicted each other).
inline int64_t plane_of(int64_t rows, int64_t width) { return rows * width + 16; }

// V[pos][b][c] for tiles [t0, t0 + nb); `cap` is the block's tile capacity (V's row count).
__attribute__((target("avx2,fma"))) inline void transform_inputs(const Tiling& g, int64_t t0, int64_t nb, int64_t cap,
                                                          float* v) {
  const int64_t per_image = g.th() * g.tw(), C = g.c, plane = plane_of(cap, C);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t t = t0 + b, n = t / per_image, ty = t % per_image / g.tw(), tx = t % g.tw();
    const int64_t iy0 = 2 * ty - g.pt, ix0 = 2 * tx - g.pl;
    bool row_in[4], col_in[4];
    for (int i = 0; i < 4; ++i) {
      row_in[i] = iy0 + i >= 0 && iy0 + i < g.h;
      col_in[i] = ix0 + i >= 0 && ix0 + i < g.w;
    }
    float* vb = v + b * C;
    for (int64_t c0 = 0; c0 < C; c0 += 8) {
      __m256 t4[4][4];  // B^T d B, built row by row: first d B per input row, then B^T over rows
      __m256 r[4][4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        __m256 d[4];
        const int64_t row = ((n * g.h + iy0 + i) * g.w + ix0) * C + c0;  // an offset: may lie outside x
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) d[j] = row_in[i] && col_in[j] ? _mm256_loadu_ps(g.x + row + j * C) : zero;
        r[i][0] = _mm256_sub_ps(d[0], d[2]);
        r[i][1] = _mm256_add_ps(d[1], d[2]);
        r[i][2] = _mm256_sub_ps(d[2], d[1]);
        r[i][3] = _mm256_sub_ps(d[1], d[3]);
      }
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        t4[0][j] = _mm256_sub_ps(r[0][j], r[2][j]);
        t4[1][j] = _mm256_add_ps(r[1][j], r[2][j]);
        t4[2][j] = _mm256_sub_ps(r[2][j], r[1][j]);
        t4[3][j] = _mm256_sub_ps(r[1][j], r[3][j]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(vb + (i * 4 + j) * plane + c0, t4[i][j]);
    }
  }
}

}  // namespace keras::cpu::winograd
