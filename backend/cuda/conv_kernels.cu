// Direct convolution kernels and the small helpers of the cuDNN path (launchers in
// conv_pool_kernels.h): zero-padded copies for asymmetric pads and the relu6 clip.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/conv_pool_kernels.h"
#include "backend/cuda/device_utils.cuh"

namespace keras::cuda::kernels {
namespace {

// One thread per output element (n, oh, ow, o): the sum over the window and the group's channels.
template <class T>
__global__ void conv_forward_kernel(const T* x, const T* k, T* y, ConvGeom g) {
  const int64_t og = g.o / g.groups;
  KERAS_GRID_LOOP(i, g.n * g.oh * g.ow * g.o) {
    const int64_t o = i % g.o;
    int64_t r = i / g.o;
    const int64_t ow = r % g.ow;
    r /= g.ow;
    const int64_t oh = r % g.oh, n = r / g.oh;
    const int64_t c0 = (o / og) * g.cg;
    double acc = 0;
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = oh * g.sh - g.pad_t + kh * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = ow * g.sw - g.pad_l + kw * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        const T* xp = x + ((n * g.h + ih) * g.w + iw) * g.c + c0;
        const T* kp = k + (kh * g.kw + kw) * g.cg * g.o + o;
        for (int64_t cg = 0; cg < g.cg; ++cg) acc += static_cast<double>(xp[cg]) * static_cast<double>(kp[cg * g.o]);
      }
    }
    y[i] = static_cast<T>(acc);
  }
}

// One thread per input element (n, ih, iw, c): the outputs whose window taps it.
template <class T>
__global__ void conv_backward_data_kernel(const T* dy, const T* k, T* dx, ConvGeom g) {
  const int64_t og = g.o / g.groups;
  KERAS_GRID_LOOP(i, g.n * g.h * g.w * g.c) {
    const int64_t c = i % g.c;
    int64_t r = i / g.c;
    const int64_t iw = r % g.w;
    r /= g.w;
    const int64_t ih = r % g.h, n = r / g.h;
    const int64_t grp = c / g.cg, cg = c % g.cg, o0 = grp * og;
    double acc = 0;
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t th = ih + g.pad_t - kh * g.dh;
      if (th < 0 || th % g.sh != 0) continue;
      const int64_t oh = th / g.sh;
      if (oh >= g.oh) continue;
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const int64_t tw = iw + g.pad_l - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0) continue;
        const int64_t ow = tw / g.sw;
        if (ow >= g.ow) continue;
        const T* dyp = dy + ((n * g.oh + oh) * g.ow + ow) * g.o + o0;
        const T* kp = k + ((kh * g.kw + kw) * g.cg + cg) * g.o + o0;
        for (int64_t j = 0; j < og; ++j) acc += static_cast<double>(dyp[j]) * static_cast<double>(kp[j]);
      }
    }
    dx[i] = static_cast<T>(acc);
  }
}

// One block per kernel element (kh, kw, cg, o): its threads stride over the (n, oh, ow)
// positions, then a fixed tree in shared memory sums their partials.
template <class T>
__global__ void conv_backward_weights_kernel(const T* x, const T* dy, T* dk, ConvGeom g) {
  __shared__ double partial[kThreads];
  const int64_t og = g.o / g.groups;
  const int64_t positions = g.n * g.oh * g.ow;
  for (int64_t e = blockIdx.x; e < g.kh * g.kw * g.cg * g.o; e += gridDim.x) {
    const int64_t o = e % g.o;
    int64_t r = e / g.o;
    const int64_t cg = r % g.cg;
    r /= g.cg;
    const int64_t kw = r % g.kw, kh = r / g.kw;
    const int64_t c = (o / og) * g.cg + cg;
    double acc = 0;
    for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
      const int64_t ow = p % g.ow;
      const int64_t q = p / g.ow;
      const int64_t oh = q % g.oh, n = q / g.oh;
      const int64_t ih = oh * g.sh - g.pad_t + kh * g.dh, iw = ow * g.sw - g.pad_l + kw * g.dw;
      if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
      acc += static_cast<double>(x[((n * g.h + ih) * g.w + iw) * g.c + c]) * static_cast<double>(dy[p * g.o + o]);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) dk[e] = static_cast<T>(partial[0]);
    __syncthreads();
  }
}

template <class T>
__global__ void pad_kernel(const T* src, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pre_h, int64_t pre_w,
                           int64_t hs, int64_t ws, T* dst) {
  KERAS_GRID_LOOP(i, n * hs * ws * c) {
    const int64_t ch = i % c;
    int64_t r = i / c;
    const int64_t x = r % ws - pre_w;
    r /= ws;
    const int64_t y = r % hs - pre_h, b = r / hs;
    dst[i] = (y >= 0 && y < h && x >= 0 && x < w) ? src[((b * h + y) * w + x) * c + ch] : T(0);
  }
}

template <class T>
__global__ void clip_max_kernel(T* y, int64_t n, T hi) {
  KERAS_GRID_LOOP(i, n) {
    const T v = y[i];
    y[i] = v > hi ? hi : v;  // NaN stays NaN
  }
}

}  // namespace

void conv2d_direct(DType t, const void* x, const void* k, void* y, const ConvGeom& g, cudaStream_t stream) {
  const int64_t n = g.n * g.oh * g.ow * g.o;
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    conv_forward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(k),
                                                                   static_cast<T*>(y), g);
  });
}

void conv2d_backward_data_direct(DType t, const void* dy, const void* k, void* dx, const ConvGeom& g,
                                 cudaStream_t stream) {
  const int64_t n = g.n * g.h * g.w * g.c;
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    conv_backward_data_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(k), static_cast<T*>(dx), g);
  });
}

void conv2d_backward_weights_direct(DType t, const void* x, const void* dy, void* dk, const ConvGeom& g,
                                    cudaStream_t stream) {
  const int64_t n = g.kh * g.kw * g.cg * g.o;
  if (n == 0) return;
  const int blocks = static_cast<int>(n < (1 << 20) ? n : (1 << 20));
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    conv_backward_weights_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                     static_cast<const T*>(dy), static_cast<T*>(dk), g);
  });
}

void pad_nhwc(int elem_size, const void* src, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pre_h,
              int64_t pre_w, int64_t hs, int64_t ws, void* dst, cudaStream_t stream) {
  const int64_t total = n * hs * ws * c;
  if (total == 0) return;
  if (elem_size == 4)
    pad_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const float*>(src), n, h, w, c, pre_h,
                                                                  pre_w, hs, ws, static_cast<float*>(dst));
  else if (elem_size == 8)
    pad_kernel<double><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const double*>(src), n, h, w, c, pre_h,
                                                                   pre_w, hs, ws, static_cast<double*>(dst));
}

void clip_max(DType t, void* y, int64_t n, double hi, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    clip_max_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), n, static_cast<T>(hi));
  });
}

}  // namespace keras::cuda::kernels
