// CPU kernels of resize_nearest, resize_nearest_grad and affine_transform (definitions:
// backend/ops_image.cpp). Plain loops: they are both the kernel and the reference.
//
// Both follow TensorFlow's kernels, which Keras 3 calls on its TensorFlow backend, in float32
// coordinate arithmetic so that ties (a coordinate exactly on x.5) land on the same pixel:
//  - resize_nearest: source index min(floor((o + 0.5f) * (in / out)), in - 1).
//  - affine_transform: ImageProjectiveTransformV3's coordinate maps (scipy.ndimage's modes) and
//    samplers; see the comments of map_reflect / map_wrap.
// Channels are innermost (NHWC), so each output pixel copies or blends rows of C values: the
// channel loops are the vectorisable inner loops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/dispatch_floating.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cpu::dispatch_floating;

constexpr int64_t kParallelMin = 1 << 14;

// ---------------- resize_nearest ----------------

std::vector<int64_t> nearest_taps(int64_t in, int64_t out) {
  std::vector<int64_t> idx(out);
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    const auto i = static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * scale));
    idx[o] = std::clamp<int64_t>(i, 0, in - 1);
  }
  return idx;
}

template <class T>
void resize_nearest_typed(const Tensor& x, Tensor& y) {
  const int64_t N = x.shape()[0], H = x.shape()[1], W = x.shape()[2], C = x.shape()[3];
  const int64_t OH = y.shape()[1], OW = y.shape()[2];
  const auto th = nearest_taps(H, OH), tw = nearest_taps(W, OW);
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
#pragma omp parallel for if (y.numel() > kParallelMin) schedule(static)
  for (int64_t r = 0; r < N * OH; ++r) {
    const int64_t n = r / OH, oy = r % OH;
    const T* row = px + (n * H + th[oy]) * W * C;
    T* out = py + r * OW * C;
    for (int64_t ox = 0; ox < OW; ++ox) std::memcpy(out + ox * C, row + tw[ox] * C, sizeof(T) * C);
  }
}

// The adjoint: each output gradient is added to the pixel it read. Parallel over batches.
template <class T>
void resize_nearest_grad_typed(const Tensor& g, Tensor& dx) {
  const int64_t N = dx.shape()[0], H = dx.shape()[1], W = dx.shape()[2], C = dx.shape()[3];
  const int64_t OH = g.shape()[1], OW = g.shape()[2];
  const auto th = nearest_taps(H, OH), tw = nearest_taps(W, OW);
  const T* pg = static_cast<const T*>(g.raw_data());
  T* pd = static_cast<T*>(dx.raw_data());
  std::memset(pd, 0, dx.nbytes());
#pragma omp parallel for if (g.numel() > kParallelMin) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy) {
      T* row = pd + (n * H + th[oy]) * W * C;
      const T* gi = pg + (n * OH + oy) * OW * C;
      for (int64_t ox = 0; ox < OW; ++ox) {
        T* d = row + tw[ox] * C;
        for (int64_t c = 0; c < C; ++c) d[c] += gi[ox * C + c];
      }
    }
}

void resize_nearest_cpu(const TensorList& in, TensorList& out, const Attrs&) {
  if (out[0].numel() == 0) return;
  dispatch_floating(in[0].dtype(), "resize_nearest kernel", [&](auto tag) { resize_nearest_typed<decltype(tag)>(in[0], out[0]); });
}

void resize_nearest_grad_cpu(const TensorList& in, TensorList& out, const Attrs&) {
  if (out[0].numel() == 0) return;
  dispatch_floating(in[0].dtype(), "resize_nearest_grad kernel",
                    [&](auto tag) { resize_nearest_grad_typed<decltype(tag)>(in[0], out[0]); });
}

// ---------------- affine_transform ----------------

enum class Fill { reflect, wrap, constant, nearest };

// (d c b a | a b c d | d c b a): TensorFlow's reflection, including its quirk that points in
// (-1, 0) map to -x - 1 < 0 and are then clamped to 0.
float map_reflect(float x, int64_t len) {
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
  return std::clamp(x, 0.0f, static_cast<float>(len - 1));
}

// (a b c d | a b c d | a b c d), with TensorFlow's period arithmetic.
float map_wrap(float x, int64_t len) {
  if (x < 0) {
    if (len <= 1) return 0.0f;
    const int64_t sz = len - 1;
    x += static_cast<float>(len * (static_cast<int64_t>(-x / static_cast<float>(sz)) + 1));
  } else if (x > static_cast<float>(len - 1)) {
    if (len <= 1) return 0.0f;
    const int64_t sz = len - 1;
    x -= static_cast<float>(len * static_cast<int64_t>(x / static_cast<float>(sz)));
  }
  return std::clamp(x, 0.0f, static_cast<float>(len - 1));
}

float map_coordinate(Fill mode, float x, int64_t len) {
  switch (mode) {
    case Fill::reflect: return map_reflect(x, len);
    case Fill::wrap: return map_wrap(x, len);
    case Fill::nearest: return std::clamp(x, 0.0f, static_cast<float>(len - 1));
    case Fill::constant: break;
  }
  return x;
}

Fill parse_fill(const std::string& s) {
  if (s == "reflect") return Fill::reflect;
  if (s == "wrap") return Fill::wrap;
  if (s == "nearest") return Fill::nearest;
  return Fill::constant;
}

template <class T>
struct AffineArgs {
  const T* x;
  T* y;
  int64_t H, W, C;
  Fill mode;
  bool bilinear;
  T fill;
  std::vector<T> fill_row;  // C copies of fill, read for taps outside the image
};

// Pointer to the C values of pixel (iy, ix) of image `base`, or the fill row outside the image.
template <class T>
const T* tap(const AffineArgs<T>& a, const T* base, int64_t iy, int64_t ix) {
  if (iy < 0 || iy >= a.H || ix < 0 || ix >= a.W) return a.fill_row.data();
  return base + (iy * a.W + ix) * a.C;
}

template <class T>
void affine_pixel(const AffineArgs<T>& a, const T* base, const float* t, int64_t oy, int64_t ox, T* out) {
  const int64_t C = a.C;
  const float fx = static_cast<float>(ox), fy = static_cast<float>(oy);
  const float k = t[6] * fx + t[7] * fy + 1.0f;
  if (k == 0.0f) {
    std::copy(a.fill_row.begin(), a.fill_row.end(), out);
    return;
  }
  const float x = map_coordinate(a.mode, (t[0] * fx + t[1] * fy + t[2]) / k, a.W);
  const float y = map_coordinate(a.mode, (t[3] * fx + t[4] * fy + t[5]) / k, a.H);
  if (!a.bilinear) {
    const T* p = tap(a, base, static_cast<int64_t>(std::round(y)), static_cast<int64_t>(std::round(x)));
    std::copy(p, p + C, out);
    return;
  }
  const float y0 = std::floor(y), x0 = std::floor(x);
  const float y1 = y0 + 1.0f, x1 = x0 + 1.0f;
  const auto iy0 = static_cast<int64_t>(y0), ix0 = static_cast<int64_t>(x0);
  const T *p00 = tap(a, base, iy0, ix0), *p01 = tap(a, base, iy0, ix0 + 1);
  const T *p10 = tap(a, base, iy0 + 1, ix0), *p11 = tap(a, base, iy0 + 1, ix0 + 1);
  const float wx0 = x1 - x, wx1 = x - x0, wy0 = y1 - y, wy1 = y - y0;
  for (int64_t c = 0; c < C; ++c) {
    const float top = wx0 * static_cast<float>(p00[c]) + wx1 * static_cast<float>(p01[c]);
    const float bottom = wx0 * static_cast<float>(p10[c]) + wx1 * static_cast<float>(p11[c]);
    out[c] = static_cast<T>(wy0 * top + wy1 * bottom);
  }
}

template <class T>
void affine_typed(const Tensor& x, const Tensor& transforms, Tensor& y, const Attrs& attrs) {
  AffineArgs<T> a{static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()),
                  x.shape()[1], x.shape()[2], x.shape()[3],
                  parse_fill(attrs.get_string("fill_mode")), attrs.get_string("interpolation") == "bilinear",
                  static_cast<T>(attrs.get_float("fill_value")), {}};
  a.fill_row.assign(a.C, a.fill);
  const int64_t N = x.shape()[0], H = a.H, W = a.W, C = a.C;
  const float* pt = static_cast<const float*>(transforms.raw_data());
  const bool shared = transforms.shape()[0] == 1;
#pragma omp parallel for if (y.numel() > kParallelMin) schedule(static)
  for (int64_t r = 0; r < N * H; ++r) {
    const int64_t n = r / H, oy = r % H;
    const float* t = pt + (shared ? 0 : n * 8);
    const T* base = a.x + n * H * W * C;
    T* out = a.y + r * W * C;
    for (int64_t ox = 0; ox < W; ++ox) affine_pixel(a, base, t, oy, ox, out + ox * C);
  }
}

void affine_transform_cpu(const TensorList& in, TensorList& out, const Attrs& attrs) {
  if (out[0].numel() == 0) return;
  dispatch_floating(in[0].dtype(), "affine_transform kernel",
                    [&](auto tag) { affine_typed<decltype(tag)>(in[0], in[1], out[0], attrs); });
}

}  // namespace

KERAS_REGISTER_KERNEL(resize_nearest, cpu, resize_nearest_cpu);
KERAS_REGISTER_KERNEL(resize_nearest_grad, cpu, resize_nearest_grad_cpu);
KERAS_REGISTER_KERNEL(affine_transform, cpu, affine_transform_cpu);

}  // namespace keras
