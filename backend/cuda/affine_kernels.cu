// CUDA kernel of affine_transform (CPU kernel and the TensorFlow coordinate rules it follows:
// backend/cpu/image_transform_kernels.cpp). One thread per output element (n, y, x, c): it maps
// the output pixel through the image's projective transform in float, folds the coordinate into
// the image by the fill mode, and samples nearest or bilinear. The float arithmetic is the
// CPU's, separately rounded (exact_math.cuh), so ties land on the CPU's pixels.
#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/exact_math.cuh"
#include "backend/cuda/train_kernels.h"

namespace keras::cuda::kernels {
namespace {

enum FillMode : int { kReflect = 0, kWrap = 1, kConstant = 2, kNearest = 3 };

// std::clamp's comparisons, so a NaN coordinate stays NaN.
__device__ inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (hi < v ? hi : v); }

__device__ inline float map_reflect(float x, int64_t len) {
  if (x < 0) {
    if (len <= 1) return 0.0f;
    const int64_t sz2 = 2 * len;
    if (x < static_cast<float>(sz2)) x = static_cast<float>(sz2 * static_cast<int64_t>(-x / static_cast<float>(sz2))) + x;
    x = x < static_cast<float>(-len) ? x + static_cast<float>(sz2) : -x - 1.0f;
  } else if (x > static_cast<float>(len - 1)) {
    if (len <= 1) return 0.0f;
    const int64_t sz2 = 2 * len;
    x -= static_cast<float>(sz2 * static_cast<int64_t>(x / static_cast<float>(sz2)));
    if (x >= static_cast<float>(len)) x = static_cast<float>(sz2) - x - 1.0f;
  }
  return clampf(x, 0.0f, static_cast<float>(len - 1));
}

__device__ inline float map_wrap(float x, int64_t len) {
  if (x < 0) {
    if (len <= 1) return 0.0f;
    const int64_t sz = len - 1;
    x += static_cast<float>(len * (static_cast<int64_t>(-x / static_cast<float>(sz)) + 1));
  } else if (x > static_cast<float>(len - 1)) {
    if (len <= 1) return 0.0f;
    const int64_t sz = len - 1;
    x -= static_cast<float>(len * static_cast<int64_t>(x / static_cast<float>(sz)));
  }
  return clampf(x, 0.0f, static_cast<float>(len - 1));
}

__device__ inline float map_coordinate(int mode, float x, int64_t len) {
  switch (mode) {
    case kReflect: return map_reflect(x, len);
    case kWrap: return map_wrap(x, len);
    case kNearest: return clampf(x, 0.0f, static_cast<float>(len - 1));
    default: return x;
  }
}

// Float to pixel index; NaN and huge values become a far negative index (outside, hence the
// fill value, even after the +1 of the bilinear neighbour), as the CPU's conversion does (x86
// yields INT64_MIN there, where CUDA would give 0 or saturate).
__device__ inline int64_t to_index(float v) {
  return v >= -1e15f && v <= 1e15f ? static_cast<int64_t>(v) : -(int64_t{1} << 62);
}

template <class T>
struct Image {
  const T* base;  // this image's (H, W, C) pixels
  int64_t h, w, c;
  T fill;
  __device__ T at(int64_t iy, int64_t ix, int64_t ch) const {
    if (iy < 0 || iy >= h || ix < 0 || ix >= w) return fill;
    return base[(iy * w + ix) * c + ch];
  }
};

template <class T>
__global__ void affine_kernel(const T* x, const float* transforms, bool shared, T* y, int64_t n, int64_t h, int64_t w,
                              int64_t c, int mode, bool bilinear, T fill) {
  const int64_t total = n * h * w * c;
  KERAS_GRID_LOOP(i, total) {
    const int64_t ch = i % c, ox = (i / c) % w, oy = (i / (c * w)) % h, b = i / (c * w * h);
    const float* t = transforms + (shared ? 0 : b * 8);
    const Image<T> img{x + b * h * w * c, h, w, c, fill};
    const float fx = static_cast<float>(ox), fy = static_cast<float>(oy);
    const float k = xadd(xadd(xmul(t[6], fx), xmul(t[7], fy)), 1.0f);
    if (k == 0.0f) {
      y[i] = fill;
      continue;
    }
    const float sx = map_coordinate(mode, xadd(xadd(xmul(t[0], fx), xmul(t[1], fy)), t[2]) / k, w);
    const float sy = map_coordinate(mode, xadd(xadd(xmul(t[3], fx), xmul(t[4], fy)), t[5]) / k, h);
    if (!bilinear) {
      y[i] = img.at(to_index(roundf(sy)), to_index(roundf(sx)), ch);
      continue;
    }
    const float y0 = floorf(sy), x0 = floorf(sx);
    const float y1 = y0 + 1.0f, x1 = x0 + 1.0f;
    const int64_t iy0 = to_index(y0), ix0 = to_index(x0);
    const int64_t iy1 = iy0 + 1, ix1 = ix0 + 1;
    const float wx0 = xsub(x1, sx), wx1 = xsub(sx, x0), wy0 = xsub(y1, sy), wy1 = xsub(sy, y0);
    const float top = xadd(xmul(wx0, static_cast<float>(img.at(iy0, ix0, ch))),
                           xmul(wx1, static_cast<float>(img.at(iy0, ix1, ch))));
    const float bottom = xadd(xmul(wx0, static_cast<float>(img.at(iy1, ix0, ch))),
                              xmul(wx1, static_cast<float>(img.at(iy1, ix1, ch))));
    y[i] = static_cast<T>(xadd(xmul(wy0, top), xmul(wy1, bottom)));
  }
}

}  // namespace

void affine_transform(DType t, const void* x, const float* transforms, bool shared_transform, void* y, int64_t n,
                      int64_t h, int64_t w, int64_t c, int fill_mode, bool bilinear, double fill_value,
                      cudaStream_t stream) {
  const int64_t total = n * h * w * c;
  if (total == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    affine_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x), transforms,
                                                                 shared_transform, static_cast<T*>(y), n, h, w, c,
                                                                 fill_mode, bilinear, static_cast<T>(fill_value));
  });
}

}  // namespace keras::cuda::kernels
