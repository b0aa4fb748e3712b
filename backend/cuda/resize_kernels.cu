// CUDA kernels of resize_bilinear, resize_nearest and their gradients (CPU kernels and the
// coordinate rules: backend/cpu/resize_kernels.cpp, backend/cpu/image_transform_kernels.cpp).
//
// The forwards give one thread to each output element and compute its taps with the CPU's
// formulas, separately rounded (exact_math.cuh), so they read the CPU's pixels with the CPU's
// weights. The gradients are gathers, never scatters: one thread per input element visits the
// few outputs whose taps can reach it (a window derived from the inverse coordinate map, widened
// by two for rounding), keeps those whose recomputed tap is exactly this input, and sums their
// contributions in a fixed order in double. Deterministic, no atomics; the CPU sums the same
// terms in another order, so the gradients agree to rounding.
#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/exact_math.cuh"
#include "backend/cuda/train_kernels.h"

namespace keras::cuda::kernels {
namespace {

// ---- bilinear taps: s = (o + 0.5) * scale - 0.5, lo = max(floor(s), 0), hi = min(ceil(s), in - 1)

struct Tap {
  int64_t lo, hi;
  double frac;
};

__device__ inline Tap bilinear_tap(int64_t o, int64_t in, double scale) {
  const double s = xsub(xmul(static_cast<double>(o) + 0.5, scale), 0.5);
  const double f = floor(s);
  const int64_t lo = static_cast<int64_t>(f), hi = static_cast<int64_t>(ceil(s));
  return {lo < 0 ? 0 : lo, hi > in - 1 ? in - 1 : hi, s - f};
}

// Outputs [first, last] whose taps may touch input i (s within (i - 1, i + 1)); the edges also
// take the outputs clamped onto them.
__device__ inline void bilinear_window(int64_t i, int64_t in, int64_t out, double scale, int64_t& first,
                                       int64_t& last) {
  first = i == 0 ? 0 : static_cast<int64_t>(floor((static_cast<double>(i) - 0.5) / scale - 0.5)) - 2;
  last = i == in - 1 ? out - 1 : static_cast<int64_t>(ceil((static_cast<double>(i) + 1.5) / scale - 0.5)) + 2;
  if (first < 0) first = 0;
  if (last > out - 1) last = out - 1;
}

// Weights of input i in output tap t: the lower tap weighs 1 - frac, the upper frac, in T as on
// the CPU. Where both taps are i the two weights stay separate terms, as the CPU adds them one by
// one (an infinite gradient times a zero weight must still give NaN). Returns how many.
template <class T>
__device__ inline int bilinear_weights(const Tap& t, int64_t i, T w[2]) {
  const T f = static_cast<T>(t.frac);
  int k = 0;
  if (t.lo == i) w[k++] = xsub(T(1), f);
  if (t.hi == i) w[k++] = f;
  return k;
}

template <class T>
__global__ void bilinear_forward(const T* x, T* y, ImageDims d, double sh, double sw) {
  const int64_t total = d.n * d.oh * d.ow * d.c;
  KERAS_GRID_LOOP(i, total) {
    const int64_t c = i % d.c, ox = (i / d.c) % d.ow, oy = (i / (d.c * d.ow)) % d.oh, n = i / (d.c * d.ow * d.oh);
    const Tap ty = bilinear_tap(oy, d.h, sh), tx = bilinear_tap(ox, d.w, sw);
    const T ly = static_cast<T>(ty.frac), lx = static_cast<T>(tx.frac);
    const T* top = x + (n * d.h + ty.lo) * d.w * d.c;
    const T* bottom = x + (n * d.h + ty.hi) * d.w * d.c;
    const T tl = top[tx.lo * d.c + c], tr = top[tx.hi * d.c + c];
    const T bl = bottom[tx.lo * d.c + c], br = bottom[tx.hi * d.c + c];
    const T t = xadd(tl, xmul(xsub(tr, tl), lx));
    const T b = xadd(bl, xmul(xsub(br, bl), lx));
    y[i] = xadd(t, xmul(xsub(b, t), ly));
  }
}

template <class T>
__global__ void bilinear_backward(const T* g, T* dx, ImageDims d, double sh, double sw) {
  const int64_t total = d.n * d.h * d.w * d.c;
  KERAS_GRID_LOOP(i, total) {
    const int64_t c = i % d.c, ix = (i / d.c) % d.w, iy = (i / (d.c * d.w)) % d.h, n = i / (d.c * d.w * d.h);
    int64_t y0, y1, x0, x1;
    bilinear_window(iy, d.h, d.oh, sh, y0, y1);
    bilinear_window(ix, d.w, d.ow, sw, x0, x1);
    double sum = 0;
    for (int64_t oy = y0; oy <= y1; ++oy) {
      T wy[2];
      const int ky = bilinear_weights(bilinear_tap(oy, d.h, sh), iy, wy);
      if (ky == 0) continue;
      const T* row = g + ((n * d.oh + oy) * d.ow) * d.c + c;
      for (int64_t ox = x0; ox <= x1; ++ox) {
        T wx[2];
        const int kx = bilinear_weights(bilinear_tap(ox, d.w, sw), ix, wx);
        const T gv = row[ox * d.c];
        for (int a = 0; a < ky; ++a) {
          const T gy = xmul(gv, wy[a]);
          for (int b = 0; b < kx; ++b) sum += static_cast<double>(xmul(gy, wx[b]));
        }
      }
    }
    dx[i] = static_cast<T>(sum);
  }
}

// ---- nearest taps: min(floor((o + 0.5f) * scale), in - 1) in float, scale = (float)in / (float)out

__device__ inline int64_t nearest_tap(int64_t o, int64_t in, float scale) {
  const int64_t i = static_cast<int64_t>(floorf(xmul(static_cast<float>(o) + 0.5f, scale)));
  return i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
}

__device__ inline void nearest_window(int64_t i, int64_t in, int64_t out, float scale, int64_t& first, int64_t& last) {
  first = i == 0 ? 0 : static_cast<int64_t>(floor(static_cast<double>(i) / scale - 0.5)) - 2;
  last = i == in - 1 ? out - 1 : static_cast<int64_t>(ceil(static_cast<double>(i + 1) / scale - 0.5)) + 2;
  if (first < 0) first = 0;
  if (last > out - 1) last = out - 1;
}

template <class T>
__global__ void nearest_forward(const T* x, T* y, ImageDims d, float sh, float sw) {
  const int64_t total = d.n * d.oh * d.ow * d.c;
  KERAS_GRID_LOOP(i, total) {
    const int64_t c = i % d.c, ox = (i / d.c) % d.ow, oy = (i / (d.c * d.ow)) % d.oh, n = i / (d.c * d.ow * d.oh);
    y[i] = x[((n * d.h + nearest_tap(oy, d.h, sh)) * d.w + nearest_tap(ox, d.w, sw)) * d.c + c];
  }
}

template <class T>
__global__ void nearest_backward(const T* g, T* dx, ImageDims d, float sh, float sw) {
  const int64_t total = d.n * d.h * d.w * d.c;
  KERAS_GRID_LOOP(i, total) {
    const int64_t c = i % d.c, ix = (i / d.c) % d.w, iy = (i / (d.c * d.w)) % d.h, n = i / (d.c * d.w * d.h);
    int64_t y0, y1, x0, x1;
    nearest_window(iy, d.h, d.oh, sh, y0, y1);
    nearest_window(ix, d.w, d.ow, sw, x0, x1);
    double sum = 0;
    for (int64_t oy = y0; oy <= y1; ++oy) {
      if (nearest_tap(oy, d.h, sh) != iy) continue;
      const T* row = g + ((n * d.oh + oy) * d.ow) * d.c + c;
      for (int64_t ox = x0; ox <= x1; ++ox)
        if (nearest_tap(ox, d.w, sw) == ix) sum += static_cast<double>(row[ox * d.c]);
    }
    dx[i] = static_cast<T>(sum);
  }
}

double bilinear_scale(int64_t in, int64_t out) { return static_cast<double>(in) / static_cast<double>(out); }
float nearest_scale(int64_t in, int64_t out) { return static_cast<float>(in) / static_cast<float>(out); }

}  // namespace

void resize_bilinear(DType t, const void* x, void* y, const ImageDims& d, cudaStream_t stream) {
  const int64_t total = d.n * d.oh * d.ow * d.c;
  if (total == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    bilinear_forward<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), d, bilinear_scale(d.h, d.oh), bilinear_scale(d.w, d.ow));
  });
}

void resize_bilinear_grad(DType t, const void* g, void* dx, const ImageDims& d, cudaStream_t stream) {
  const int64_t total = d.n * d.h * d.w * d.c;
  if (total == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    bilinear_backward<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(g), static_cast<T*>(dx), d, bilinear_scale(d.h, d.oh), bilinear_scale(d.w, d.ow));
  });
}

void resize_nearest(DType t, const void* x, void* y, const ImageDims& d, cudaStream_t stream) {
  const int64_t total = d.n * d.oh * d.ow * d.c;
  if (total == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    nearest_forward<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), d, nearest_scale(d.h, d.oh), nearest_scale(d.w, d.ow));
  });
}

void resize_nearest_grad(DType t, const void* g, void* dx, const ImageDims& d, cudaStream_t stream) {
  const int64_t total = d.n * d.h * d.w * d.c;
  if (total == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    nearest_backward<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(g), static_cast<T*>(dx), d, nearest_scale(d.h, d.oh), nearest_scale(d.w, d.ow));
  });
}

}  // namespace keras::cuda::kernels
