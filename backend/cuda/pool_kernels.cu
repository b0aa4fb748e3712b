// Pooling kernels of the CUDA backend (launchers in conv_pool_kernels.h). They follow the CPU
// reference loops (backend/cpu/pool_reference.h) term for term: the same window order, the same
// max/NaN/tie rule and index numbering, the same (sum, then times 1 / count) average, and the
// gradients summed over the covering windows in the (oh, ow) order in which the CPU scatters.
// So max pooling (values, indices and gradients: comparisons and sums in the same order) equals
// the CPU bit for bit; average pooling to rounding (a contracted multiply-add may differ).
//
// Own kernels rather than cuDNN pooling: cuDNN returns no indices (the max_pool2d op outputs
// them and max_pool2d_grad reads them), takes only symmetric pads (TF's "same" is not), and
// its backward pass recomputes the argmax from x with its own tie rule.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/conv_pool_kernels.h"
#include "backend/cuda/device_utils.cuh"

namespace keras::cuda::kernels {
namespace {

// Decomposes the flat NHWC index i over (n, a, b, c).
struct Pos {
  int64_t n, a, b, c;
};
__device__ inline Pos split(int64_t i, int64_t A, int64_t B, int64_t C) {
  Pos p;
  p.c = i % C;
  i /= C;
  p.b = i % B;
  i /= B;
  p.a = i % A;
  p.n = i / A;
  return p;
}

__device__ inline int64_t window_count(const PoolGeom& g, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * g.sh - g.pad_t, w0 = ow * g.sw - g.pad_l;
  const int64_t hs = h0 > 0 ? h0 : 0, he = h0 + g.ph < g.h ? h0 + g.ph : g.h;
  const int64_t ws = w0 > 0 ? w0 : 0, we = w0 + g.pw < g.w ? w0 + g.pw : g.w;
  return (he > hs ? he - hs : 0) * (we > ws ? we - ws : 0);
}

// The output rows [lo, hi] whose windows cover input row `i` (empty when lo > hi).
__device__ inline void covering(int64_t i, int64_t pad, int64_t pool, int64_t stride, int64_t out, int64_t& lo,
                                int64_t& hi) {
  const int64_t first = i + pad - pool + 1;  // smallest window start that still reaches i
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = (i + pad) / stride;
  if (hi > out - 1) hi = out - 1;
}

template <class T>
__global__ void max_forward_kernel(const T* x, T* y, int32_t* indices, PoolGeom g) {
  KERAS_GRID_LOOP(i, g.n * g.oh * g.ow * g.c) {
    const Pos p = split(i, g.oh, g.ow, g.c);
    T best = T(0);
    int32_t arg = 0;
    bool first = true;
    for (int64_t kh = 0; kh < g.ph; ++kh) {
      const int64_t ih = p.a * g.sh - g.pad_t + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t kw = 0; kw < g.pw; ++kw) {
        const int64_t iw = p.b * g.sw - g.pad_l + kw;
        if (iw < 0 || iw >= g.w) continue;
        const T v = x[((p.n * g.h + ih) * g.w + iw) * g.c + p.c];
        if (first || v > best || v != v) best = v, arg = static_cast<int32_t>(kh * g.pw + kw);
        first = false;
      }
    }
    y[i] = best;
    if (indices) indices[i] = arg;
  }
}

template <class T>
__global__ void max_backward_kernel(const T* grad, const int32_t* indices, T* dx, PoolGeom g) {
  KERAS_GRID_LOOP(i, g.n * g.h * g.w * g.c) {
    const Pos p = split(i, g.h, g.w, g.c);
    int64_t oh0, oh1, ow0, ow1;
    covering(p.a, g.pad_t, g.ph, g.sh, g.oh, oh0, oh1);
    covering(p.b, g.pad_l, g.pw, g.sw, g.ow, ow0, ow1);
    T acc = T(0);
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const int64_t kh = p.a + g.pad_t - oh * g.sh;
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t kw = p.b + g.pad_l - ow * g.sw;
        const int64_t o = ((p.n * g.oh + oh) * g.ow + ow) * g.c + p.c;
        if (indices[o] == kh * g.pw + kw) acc += grad[o];
      }
    }
    dx[i] = acc;
  }
}

template <class T>
__global__ void avg_forward_kernel(const T* x, T* y, PoolGeom g) {
  KERAS_GRID_LOOP(i, g.n * g.oh * g.ow * g.c) {
    const Pos p = split(i, g.oh, g.ow, g.c);
    T acc = T(0);
    for (int64_t kh = 0; kh < g.ph; ++kh) {
      const int64_t ih = p.a * g.sh - g.pad_t + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t kw = 0; kw < g.pw; ++kw) {
        const int64_t iw = p.b * g.sw - g.pad_l + kw;
        if (iw < 0 || iw >= g.w) continue;
        acc += x[((p.n * g.h + ih) * g.w + iw) * g.c + p.c];
      }
    }
    y[i] = acc * (T(1) / static_cast<T>(window_count(g, p.a, p.b)));
  }
}

template <class T>
__global__ void avg_backward_kernel(const T* grad, T* dx, PoolGeom g) {
  KERAS_GRID_LOOP(i, g.n * g.h * g.w * g.c) {
    const Pos p = split(i, g.h, g.w, g.c);
    int64_t oh0, oh1, ow0, ow1;
    covering(p.a, g.pad_t, g.ph, g.sh, g.oh, oh0, oh1);
    covering(p.b, g.pad_l, g.pw, g.sw, g.ow, ow0, ow1);
    T acc = T(0);
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow)
        acc += grad[((p.n * g.oh + oh) * g.ow + ow) * g.c + p.c] * (T(1) / static_cast<T>(window_count(g, oh, ow)));
    dx[i] = acc;
  }
}

}  // namespace

void max_pool2d_forward(DType t, const void* x, void* y, int32_t* indices, const PoolGeom& g, cudaStream_t stream) {
  const int64_t n = g.n * g.oh * g.ow * g.c;
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    max_forward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                  indices, g);
  });
}

void max_pool2d_backward(DType t, const void* grad, const int32_t* indices, void* dx, const PoolGeom& g,
                         cudaStream_t stream) {
  const int64_t n = g.n * g.h * g.w * g.c;
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    max_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(grad), indices,
                                                                   static_cast<T*>(dx), g);
  });
}

void avg_pool2d_forward(DType t, const void* x, void* y, const PoolGeom& g, cudaStream_t stream) {
  const int64_t n = g.n * g.oh * g.ow * g.c;
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    avg_forward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), g);
  });
}

void avg_pool2d_backward(DType t, const void* grad, void* dx, const PoolGeom& g, cudaStream_t stream) {
  const int64_t n = g.n * g.h * g.w * g.c;
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    avg_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(grad), static_cast<T*>(dx),
                                                                   g);
  });
}

}  // namespace keras::cuda::kernels
