// The direct AVX2 convolutions (see conv_direct.h).
//
// Both run one core, out = act(conv(in, w) + bias) with w in (kh, kw, in, out) layout. A tile is
// up to 6 neighbouring output pixels of one row times 8 or 16 output channels, accumulated in
// named registers. A pixel whose tap falls into the padding reads from a row of zeros instead,
// so border tiles run the same loop. Output rows are independent and split over the threads.
#include "backend/cpu/conv_direct.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cpu/conv_direct_avx512.h"
#include "backend/cpu/conv_direct_problem.h"
#include "backend/cpu/cpu_isa.h"

namespace keras::cpu {
namespace {

std::atomic<bool>& direct_enabled() {
  static std::atomic<bool> enabled = [] {
    const char* v = std::getenv("KERAS_CONV_DIRECT");
    return !(v && std::string(v) == "0");
  }();
  return enabled;
}

template <int R, int V>
__attribute__((target("avx2,fma"))) void output_tile(const DirectConv& g, int64_t n, int64_t oy, int64_t ox0,
                                                     int64_t o0) {
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00,
         a40 = a00, a41 = a00, a50 = a00, a51 = a00;
  for (int64_t kh = 0; kh < g.kh; ++kh) {
    int64_t iy = oy * g.sh + kh * g.dh - g.pt;
    if (iy < 0 || iy >= g.ih) continue;
    const float* row = g.in + (n * g.ih + iy) * g.iw * g.ci;
    for (int64_t kw = 0; kw < g.kw; ++kw) {
      int64_t ix0 = ox0 * g.sw + kw * g.dw - g.pl;
      auto pixel = [&](int r) {
        int64_t ix = ix0 + r * g.sw;
        return r < R && ix >= 0 && ix < g.iw ? row + ix * g.ci : g.zeros;
      };
      // Named pointers and accumulators: GCC spills arrays of them to the stack in the loop.
      const float *p0 = pixel(0), *p1 = pixel(1), *p2 = pixel(2), *p3 = pixel(3), *p4 = pixel(4), *p5 = pixel(5);
      const float* wp = g.w + (kh * g.kw + kw) * g.ci * g.co + o0;
      for (int64_t c = 0; c < g.ci; ++c, wp += g.co) {
        __m256 w0 = _mm256_loadu_ps(wp), w1 = V > 1 ? _mm256_loadu_ps(wp + 8) : w0;
#define KERAS_DX_PIXEL(r, p, lo, hi)                      \
  if constexpr (R > r) {                                  \
    __m256 b = _mm256_broadcast_ss(p + c);                \
    lo = _mm256_fmadd_ps(b, w0, lo);                      \
    if constexpr (V > 1) hi = _mm256_fmadd_ps(b, w1, hi); \
  }
        KERAS_DX_PIXEL(0, p0, a00, a01)
        KERAS_DX_PIXEL(1, p1, a10, a11)
        KERAS_DX_PIXEL(2, p2, a20, a21)
        KERAS_DX_PIXEL(3, p3, a30, a31)
        KERAS_DX_PIXEL(4, p4, a40, a41)
        KERAS_DX_PIXEL(5, p5, a50, a51)
#undef KERAS_DX_PIXEL
      }
    }
  }
  float* out = g.out + ((n * g.oh + oy) * g.ow + ox0) * g.co + o0;
  const __m256 pixels[6][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}, {a40, a41}, {a50, a51}};
  __m256 bias[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  if (g.bias)
    for (int v = 0; v < V; ++v) bias[v] = _mm256_loadu_ps(g.bias + o0 + 8 * v);
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      __m256 value = _mm256_add_ps(pixels[r][v], bias[v]);
      if (g.relu)  // max(x, 0) gives 0 for NaN; blend the NaN lanes back (relu keeps NaN)
        value = _mm256_blendv_ps(_mm256_max_ps(value, _mm256_setzero_ps()), value,
                                 _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
      _mm256_storeu_ps(out + r * g.co + 8 * v, value);
    }
}

using TileFn = void (*)(const DirectConv&, int64_t, int64_t, int64_t, int64_t);

template <int V>
TileFn tile_for(int64_t pixels) {
  switch (pixels) {
    case 1: return output_tile<1, V>;
    case 2: return output_tile<2, V>;
    case 3: return output_tile<3, V>;
    case 4: return output_tile<4, V>;
    case 5: return output_tile<5, V>;
    default: return output_tile<6, V>;
  }
}

void run(const DirectConv& g) {
  if (avx512::conv_direct_supports(g)) return avx512::conv_direct(g);
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t row = 0; row < g.n * g.oh; ++row) {
    int64_t n = row / g.oh, oy = row % g.oh;
    for (int64_t ox0 = 0; ox0 < g.ow; ox0 += 6) {
      int64_t pixels = std::min<int64_t>(6, g.ow - ox0);
      for (int64_t o0 = 0; o0 < g.co; o0 += 16) {
        TileFn fn = g.co - o0 >= 16 ? tile_for<2>(pixels) : tile_for<1>(pixels);
        fn(g, n, oy, ox0, o0);
      }
    }
  }
}

}  // namespace

bool conv_direct_available() {
  return isa_allows_avx2() && direct_enabled().load();
}

bool conv2d_direct_supported(const Shape& kernel_shape, const ConvParams& p, const std::string& activation) {
  // Measured against oneDNN (3x3, 16..64 channels): 5-30% faster at stride 1, even at stride 2,
  // and slower from about 128 input channels, where oneDNN's blocked kernels reuse more per load.
  // Stride 2 is timed where the AVX-512 kernel runs it (oneDNN 2.6's stride-2 3x3 forward reached
  // 210-290 GFLOP/s on ResNet-20's shapes there).
  if (kernel_shape.size() != 4 || p.groups != 1) return false;
  const bool strides = (p.stride_h == 1 && p.stride_w == 1) ||
                       avx512::conv_direct_supports(kernel_shape[2], kernel_shape[3], p.stride_h, p.stride_w, p.pad_left);
  return conv_direct_available() && strides && kernel_shape[2] >= 8 && kernel_shape[2] <= kDirectMaxChannels &&
         kernel_shape[3] % 8 == 0 && (activation == "linear" || activation == "relu");
}

bool conv2d_backward_data_direct_supported(const Shape& kernel_shape, const ConvParams& p) {
  // Bounded like the forward kernel: ResNet50's layers of 128 to 2048 channels ran 3-4x slower
  // here than in oneDNN's AVX-512 kernels (a whole training step: 1.5 against 6.7 samples/s).
  return conv_direct_available() && kernel_shape.size() == 4 && p.stride_h == 1 && p.stride_w == 1 && p.groups == 1 &&
         kernel_shape[2] % 8 == 0 && kernel_shape[2] <= kDirectMaxChannels && kernel_shape[3] <= kDirectMaxChannels;
}

void set_conv_direct(bool enabled) { direct_enabled().store(enabled); }

void conv2d_direct(const float* x, const Shape& xs, const float* kernel, const Shape& ks, const float* bias, float* y,
                   const Shape& ys, const ConvParams& p, const std::string& activation) {
  std::vector<float> zeros(static_cast<size_t>(ks[2]), 0.f);
  run({x, xs[0], xs[1], xs[2], xs[3], kernel, ks[0], ks[1], p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
       p.pad_top, p.pad_left, bias, activation == "relu", y, ys[1], ys[2], ks[3], zeros.data()});
}

void conv2d_backward_data_direct(const float* dy, const Shape& ys, const float* kernel, const Shape& ks, float* dx,
                                 const Shape& xs, const ConvParams& p) {
  const int64_t KH = ks[0], KW = ks[1], C = ks[2], O = ks[3];
  // The flipped kernel with in/out swapped: (kh', kw', o, c) = kernel(KH-1-kh', KW-1-kw', c, o).
  std::vector<float> flipped(static_cast<size_t>(KH * KW * C * O));
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) {
      const float* src = kernel + ((KH - 1 - kh) * KW + (KW - 1 - kw)) * C * O;
      float* dst = flipped.data() + (kh * KW + kw) * O * C;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t o = 0; o < O; ++o) dst[o * C + c] = src[c * O + o];
    }
  std::vector<float> zeros(static_cast<size_t>(O), 0.f);
  run({dy, ys[0], ys[1], ys[2], O, flipped.data(), KH, KW, 1, 1, p.dilation_h, p.dilation_w,
       (KH - 1) * p.dilation_h - p.pad_top, (KW - 1) * p.dilation_w - p.pad_left, nullptr, false, dx, xs[1], xs[2], C,
       zeros.data()});
}

}  // namespace keras::cpu
