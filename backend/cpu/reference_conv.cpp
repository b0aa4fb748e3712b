// Plain-loop convolutions (see reference_conv.h). All three loops walk the same index map
//   y[n, oh, ow, g*OG + o] += x[n, oh*sh - pt + i*dh, ow*sw - pl + j*dw, g*CG + c] * k[i, j, c, g*OG + o]
// so that a mistake in the geometry of one would show in the comparison of the others.
#include <cmath>
#include <vector>

#include "backend/cpu/reference_conv.h"

namespace keras::cpu {
namespace {

double activate(const std::string& act, double z) {
  if (act == "linear") return z;
  if (act == "relu") return z > 0 ? z : 0.0;
  if (act == "relu6") return z > 0 ? (z < 6 ? z : 6.0) : 0.0;
  if (act == "sigmoid") return 1.0 / (1.0 + std::exp(-z));
  if (act == "tanh") return std::tanh(z);
  if (act == "elu") return z > 0 ? z : std::expm1(z);
  if (act == "gelu") return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
  if (act == "swish") return z / (1.0 + std::exp(-z));
  fail<ValueError>("conv2d (reference)", "a fused activation (linear, relu, relu6, sigmoid, tanh, elu, gelu, swish)",
                   "'" + act + "'");
}

struct Geometry {
  int64_t n, h, w, c, kh, kw, cg, o, og, oh, ow, groups;
};

Geometry geometry(const Shape& xs, const Shape& ks, const Shape& ys, const ConvParams& p) {
  Geometry g{};
  g.n = xs[0], g.h = xs[1], g.w = xs[2], g.c = xs[3];
  g.kh = ks[0], g.kw = ks[1], g.cg = ks[2], g.o = ks[3];
  g.oh = ys[1], g.ow = ys[2];
  g.groups = p.groups;
  g.og = g.o / p.groups;
  return g;
}

// Calls f(x_index, k_index, y_index) for every multiply of the convolution.
template <class F>
void for_each_tap(const Geometry& g, const ConvParams& p, F&& f) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow)
        for (int64_t i = 0; i < g.kh; ++i) {
          int64_t ih = oh * p.stride_h - p.pad_top + i * p.dilation_h;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            int64_t iw = ow * p.stride_w - p.pad_left + j * p.dilation_w;
            if (iw < 0 || iw >= g.w) continue;
            for (int64_t gr = 0; gr < g.groups; ++gr)
              for (int64_t c = 0; c < g.cg; ++c)
                for (int64_t o = 0; o < g.og; ++o) {
                  int64_t oc = gr * g.og + o;
                  f(((n * g.h + ih) * g.w + iw) * g.c + gr * g.cg + c, ((i * g.kw + j) * g.cg + c) * g.o + oc,
                    ((n * g.oh + oh) * g.ow + ow) * g.o + oc);
                }
          }
        }
}

template <class T>
void store(Tensor& out, const std::vector<double>& acc) {
  T* p = out.data<T>();
  for (size_t i = 0; i < acc.size(); ++i) p[i] = static_cast<T>(acc[i]);
}

void store_any(Tensor& out, const std::vector<double>& acc) {
  if (out.dtype() == DType::float64) store<double>(out, acc);
  else if (out.dtype() == DType::float32) store<float>(out, acc);
  else fail<TypeError>("conv2d (reference)", "float32 or float64", dtype_name(out.dtype()));
}

std::vector<double> values(const Tensor& t) { return t.contiguous().to_vector<double>(); }

}  // namespace

void conv2d_loop(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& p,
                 const std::string& activation, Tensor& y) {
  Geometry g = geometry(x.shape(), kernel.shape(), y.shape(), p);
  std::vector<double> xv = values(x), kv = values(kernel), acc(static_cast<size_t>(y.numel()), 0.0);
  for_each_tap(g, p, [&](int64_t xi, int64_t ki, int64_t yi) { acc[yi] += xv[xi] * kv[ki]; });
  std::vector<double> bv = bias.defined() ? values(bias) : std::vector<double>();
  for (size_t i = 0; i < acc.size(); ++i)
    acc[i] = activate(activation, acc[i] + (bv.empty() ? 0.0 : bv[i % static_cast<size_t>(g.o)]));
  store_any(y, acc);
}

void conv2d_backward_data_loop(const Tensor& dy, const Tensor& kernel, const ConvParams& p, Tensor& dx) {
  Geometry g = geometry(dx.shape(), kernel.shape(), dy.shape(), p);
  std::vector<double> dyv = values(dy), kv = values(kernel), acc(static_cast<size_t>(dx.numel()), 0.0);
  for_each_tap(g, p, [&](int64_t xi, int64_t ki, int64_t yi) { acc[xi] += dyv[yi] * kv[ki]; });
  store_any(dx, acc);
}

void conv2d_backward_weights_loop(const Tensor& x, const Tensor& dy, const ConvParams& p, Tensor& dkernel) {
  Geometry g = geometry(x.shape(), dkernel.shape(), dy.shape(), p);
  std::vector<double> xv = values(x), dyv = values(dy), acc(static_cast<size_t>(dkernel.numel()), 0.0);
  for_each_tap(g, p, [&](int64_t xi, int64_t ki, int64_t yi) { acc[ki] += xv[xi] * dyv[yi]; });
  store_any(dkernel, acc);
}

Tensor reference_conv2d(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& p,
                        const std::string& activation) {
  const Shape& xs = x.shape();
  const Shape& ks = kernel.shape();
  int64_t oh = (xs[1] + p.pad_top + p.pad_bottom - (p.dilation_h * (ks[0] - 1) + 1)) / p.stride_h + 1;
  int64_t ow = (xs[2] + p.pad_left + p.pad_right - (p.dilation_w * (ks[1] - 1) + 1)) / p.stride_w + 1;
  Tensor y = Tensor::empty({xs[0], oh, ow, ks[3]}, x.dtype());
  conv2d_loop(x, kernel, bias, p, activation, y);
  return y;
}

Tensor reference_conv2d_backward_data(const Tensor& dy, const Tensor& kernel, const Shape& input_shape,
                                      const ConvParams& p) {
  Tensor dx = Tensor::empty(input_shape, dy.dtype());
  conv2d_backward_data_loop(dy, kernel, p, dx);
  return dx;
}

Tensor reference_conv2d_backward_weights(const Tensor& x, const Tensor& dy, const Shape& kernel_shape,
                                         const ConvParams& p) {
  Tensor dk = Tensor::empty(kernel_shape, x.dtype());
  conv2d_backward_weights_loop(x, dy, p, dk);
  return dk;
}

}  // namespace keras::cpu
