// CPU kernels of resize_bilinear and resize_bilinear_grad (definitions: backend/ops_spatial.cpp).
// Plain loops only: they are both the kernel and the reference.
//
// Half-pixel centres as tf.image.resize: source coordinate s = (o + 0.5) * in / out - 0.5; the
// two taps are floor(s) and ceil(s) clamped into [0, in - 1] and the weight of the upper one is
// s - floor(s). Channels are innermost (NHWC), so every tap is a contiguous row of C values.
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/dispatch_floating.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cpu::dispatch_floating;

constexpr int64_t kParallelMin = 1 << 14;

struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<double> frac;
};

Taps taps(int64_t in, int64_t out) {
  Taps t;
  t.lo.resize(out), t.hi.resize(out), t.frac.resize(out);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t o = 0; o < out; ++o) {
    const double s = (static_cast<double>(o) + 0.5) * scale - 0.5;
    const double f = std::floor(s);
    t.lo[o] = std::max<int64_t>(static_cast<int64_t>(f), 0);
    t.hi[o] = std::min<int64_t>(static_cast<int64_t>(std::ceil(s)), in - 1);
    t.frac[o] = s - f;
  }
  return t;
}

template <class T>
void forward_typed(const Tensor& x, Tensor& y) {
  const int64_t N = x.shape()[0], H = x.shape()[1], W = x.shape()[2], C = x.shape()[3];
  const int64_t OH = y.shape()[1], OW = y.shape()[2];
  const Taps th = taps(H, OH), tw = taps(W, OW);
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
#pragma omp parallel for if (y.numel() > kParallelMin) schedule(static)
  for (int64_t r = 0; r < N * OH; ++r) {
    const int64_t n = r / OH, oy = r % OH;
    const T ly = static_cast<T>(th.frac[oy]);
    const T* top = px + (n * H + th.lo[oy]) * W * C;
    const T* bottom = px + (n * H + th.hi[oy]) * W * C;
    for (int64_t ox = 0; ox < OW; ++ox) {
      const T lx = static_cast<T>(tw.frac[ox]);
      const T *tl = top + tw.lo[ox] * C, *tr = top + tw.hi[ox] * C;
      const T *bl = bottom + tw.lo[ox] * C, *br = bottom + tw.hi[ox] * C;
      T* out = py + ((n * OH + oy) * OW + ox) * C;
      for (int64_t c = 0; c < C; ++c) {
        const T t = tl[c] + (tr[c] - tl[c]) * lx;
        const T b = bl[c] + (br[c] - bl[c]) * lx;
        out[c] = t + (b - t) * ly;
      }
    }
  }
}

// The adjoint of the forward: each output gradient is spread over its four taps. Batches are
// independent, so the scatter is parallel over them.
template <class T>
void backward_typed(const Tensor& g, Tensor& dx) {
  const int64_t N = dx.shape()[0], H = dx.shape()[1], W = dx.shape()[2], C = dx.shape()[3];
  const int64_t OH = g.shape()[1], OW = g.shape()[2];
  const Taps th = taps(H, OH), tw = taps(W, OW);
  const T* pg = static_cast<const T*>(g.raw_data());
  T* pd = static_cast<T*>(dx.raw_data());
  std::memset(pd, 0, dx.nbytes());
#pragma omp parallel for if (g.numel() > kParallelMin) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oy = 0; oy < OH; ++oy) {
      const T ly = static_cast<T>(th.frac[oy]);
      T* top = pd + (n * H + th.lo[oy]) * W * C;
      T* bottom = pd + (n * H + th.hi[oy]) * W * C;
      for (int64_t ox = 0; ox < OW; ++ox) {
        const T lx = static_cast<T>(tw.frac[ox]);
        const T* gi = pg + ((n * OH + oy) * OW + ox) * C;
        T *tl = top + tw.lo[ox] * C, *tr = top + tw.hi[ox] * C;
        T *bl = bottom + tw.lo[ox] * C, *br = bottom + tw.hi[ox] * C;
        for (int64_t c = 0; c < C; ++c) {
          const T gt = gi[c] * (T(1) - ly), gb = gi[c] * ly;
          tl[c] += gt * (T(1) - lx);
          tr[c] += gt * lx;
          bl[c] += gb * (T(1) - lx);
          br[c] += gb * lx;
        }
      }
    }
  }
}

void resize_bilinear_cpu(const TensorList& in, TensorList& out, const Attrs&) {
  if (out[0].numel() == 0) return;
  dispatch_floating(in[0].dtype(), "resize_bilinear kernel", [&](auto tag) { forward_typed<decltype(tag)>(in[0], out[0]); });
}

void resize_bilinear_grad_cpu(const TensorList& in, TensorList& out, const Attrs&) {
  if (out[0].numel() == 0) return;
  dispatch_floating(in[0].dtype(), "resize_bilinear_grad kernel",
                    [&](auto tag) { backward_typed<decltype(tag)>(in[0], out[0]); });
}

}  // namespace

KERAS_REGISTER_KERNEL(resize_bilinear, cpu, resize_bilinear_cpu);
KERAS_REGISTER_KERNEL(resize_bilinear_grad, cpu, resize_bilinear_grad_cpu);

}  // namespace keras
