// CPU kernels of the batch-normalization ops (definitions: backend/ops_norm.cpp).
//
// Training forward = batch_moments then the per-channel affine map y = x * a + b (the same loop
// as batch_norm_inference). float32 moments take one pass (float sums over blocks of rows,
// double across blocks); float64 moments and the reference take two passes in double. The
// backward runs on oneDNN batch_normalization (scale and shift, cached per dims and epsilon)
// for float32, the plain loops otherwise.
//
// Measured on the 2-core AMD EPYC (AVX2), one thread, process CPU time, x (64, 32, 32, 16):
// oneDNN 2.6's fused forward_training 0.54 ms; these moments 0.20 ms + the affine map 0.22 ms
// (the previous two-pass double moments took 0.59 ms, and ran again in the backward).
#include <cmath>
#include <algorithm>
#include <memory>
#include <vector>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/norm_reference.h"
#include "backend/op_registry.h"

namespace keras::cpu {
namespace {

template <class F>
void dispatch_floating(DType t, const char* where, F&& f) {
  if (t == DType::float32) f(float{});
  else if (t == DType::float64) f(double{});
  else fail<TypeError>(where, "float32 or float64", dtype_name(t));
}

int64_t channels(const Tensor& x) { return x.rank() == 0 ? 1 : x.shape().back(); }

template <class T>
void forward_typed(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
                   Tensor& var) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const T* px = static_cast<const T*>(x.raw_data());
  const T* pg = static_cast<const T*>(gamma.raw_data());
  const T* pb = static_cast<const T*>(beta.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  std::vector<double> mu(C, 0.0), v(C, 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) mu[c] += px[m * C + c];
  for (int64_t c = 0; c < C; ++c) mu[c] /= static_cast<double>(M);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      double d = px[m * C + c] - mu[c];
      v[c] += d * d;
    }
  std::vector<double> scale(C), shift(C);
  for (int64_t c = 0; c < C; ++c) {
    v[c] /= static_cast<double>(M);
    scale[c] = pg[c] / std::sqrt(v[c] + eps);
    shift[c] = pb[c] - mu[c] * scale[c];
    static_cast<T*>(mean.raw_data())[c] = static_cast<T>(mu[c]);
    static_cast<T*>(var.raw_data())[c] = static_cast<T>(v[c]);
  }
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) py[m * C + c] = static_cast<T>(px[m * C + c] * scale[c] + shift[c]);
}

// With xhat = (x - mean) * rstd: dbeta = sum g, dgamma = sum g * xhat,
// dx = gamma * rstd / M * (M * g - dbeta - xhat * dgamma).
template <class T>
void backward_typed(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& var,
                    double eps, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const T* pgr = static_cast<const T*>(grad.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  const T* pga = static_cast<const T*>(gamma.raw_data());
  const T* pm = static_cast<const T*>(mean.raw_data());
  const T* pv = static_cast<const T*>(var.raw_data());
  T* pdx = static_cast<T*>(dx.raw_data());
  std::vector<double> rstd(C), db(C, 0.0), dg(C, 0.0);
  for (int64_t c = 0; c < C; ++c) rstd[c] = 1.0 / std::sqrt(static_cast<double>(pv[c]) + eps);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      double g = pgr[m * C + c];
      db[c] += g;
      dg[c] += g * (px[m * C + c] - pm[c]) * rstd[c];
    }
  const double inv_m = 1.0 / static_cast<double>(M);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      double xhat = (px[m * C + c] - pm[c]) * rstd[c];
      pdx[m * C + c] = static_cast<T>(pga[c] * rstd[c] * (pgr[m * C + c] - inv_m * db[c] - xhat * inv_m * dg[c]));
    }
  for (int64_t c = 0; c < C; ++c) {
    static_cast<T*>(dgamma.raw_data())[c] = static_cast<T>(dg[c]);
    static_cast<T*>(dbeta.raw_data())[c] = static_cast<T>(db[c]);
  }
}

// Rows are split over threads, each with its own per-channel partial sums.
template <class T>
void moments_typed(const Tensor& x, Tensor& mean, Tensor& var) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const T* px = static_cast<const T*>(x.raw_data());
  std::vector<double> mu(C, 0.0), v(C, 0.0);
  auto reduce = [&](auto&& term, std::vector<double>& acc) {
#pragma omp parallel if (M * C > (1 << 15))
    {
      std::vector<double> part(C, 0.0);
#pragma omp for schedule(static) nowait
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < C; ++c) part[c] += term(px[m * C + c], c);
#pragma omp critical
      for (int64_t c = 0; c < C; ++c) acc[c] += part[c];
    }
  };
  reduce([](T value, int64_t) { return static_cast<double>(value); }, mu);
  for (int64_t c = 0; c < C; ++c) mu[c] /= static_cast<double>(M);
  reduce([&](T value, int64_t c) { double d = value - mu[c]; return d * d; }, v);
  for (int64_t c = 0; c < C; ++c) {
    static_cast<T*>(mean.raw_data())[c] = static_cast<T>(mu[c]);
    static_cast<T*>(var.raw_data())[c] = static_cast<T>(v[c] / static_cast<double>(M));
  }
}

// One pass: each thread sums blocks of kRows rows in float, shifted by the first row so that a
// large mean does not swamp the variance, and adds each block's sums into double. var is
// E[(x - s)^2] - E[x - s]^2, clamped at 0.
void moments_f32(const Tensor& x, Tensor& mean, Tensor& var) {
  constexpr int64_t kRows = 128;
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const float* px = x.data<float>();
  const float* shift = px;
  std::vector<double> s1(C, 0.0), s2(C, 0.0);
#pragma omp parallel if (M * C > (1 << 15))
  {
    std::vector<float> b1(C), b2(C);
    std::vector<double> t1(C, 0.0), t2(C, 0.0);
    const int64_t blocks = (M + kRows - 1) / kRows;
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    for (int64_t b = blocks * id / nt, end = blocks * (id + 1) / nt; b < end; ++b) {
      float* __restrict a1 = b1.data();
      float* __restrict a2 = b2.data();
      std::fill(a1, a1 + C, 0.f);
      std::fill(a2, a2 + C, 0.f);
      for (int64_t m = b * kRows, m_end = std::min(M, m + kRows); m < m_end; ++m) {
        const float* __restrict row = px + m * C;
        for (int64_t c = 0; c < C; ++c) {
          const float d = row[c] - shift[c];
          a1[c] += d;
          a2[c] += d * d;
        }
      }
      for (int64_t c = 0; c < C; ++c) t1[c] += a1[c], t2[c] += a2[c];
    }
#pragma omp critical
    for (int64_t c = 0; c < C; ++c) s1[c] += t1[c], s2[c] += t2[c];
  }
  for (int64_t c = 0; c < C; ++c) {
    const double d = s1[c] / static_cast<double>(M);
    mean.data<float>()[c] = static_cast<float>(shift[c] + d);
    var.data<float>()[c] = static_cast<float>(std::max(0.0, s2[c] / static_cast<double>(M) - d * d));
  }
}

template <class T>
void inference_typed(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma, const Tensor& beta,
                     double eps, Tensor& y) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  std::vector<T> a(C), b(C);
  for (int64_t c = 0; c < C; ++c) {
    const double s = static_cast<const T*>(gamma.raw_data())[c] / std::sqrt(static_cast<const T*>(var.raw_data())[c] + eps);
    a[c] = static_cast<T>(s);
    b[c] = static_cast<T>(static_cast<const T*>(beta.raw_data())[c] - static_cast<const T*>(mean.raw_data())[c] * s);
  }
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  const T* pa = a.data();
  const T* pb = b.data();
#pragma omp parallel for if (M * C > (1 << 15)) schedule(static)
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) py[m * C + c] = px[m * C + c] * pa[c] + pb[c];
}

// ---- oneDNN ----
using dnnl::memory;

// A rank-4 input keeps its (N, H, W) split so oneDNN can parallelise over it; anything else is
// (M, C, 1, 1). Both are the same bytes in NHWC.
memory::desc data_desc(const Tensor& x) {
  const int64_t C = channels(x);
  if (x.rank() == 4) return memory::desc({x.shape()[0], C, x.shape()[1], x.shape()[2]}, memory::data_type::f32, memory::format_tag::nhwc);
  return memory::desc({x.numel() / C, C, 1, 1}, memory::data_type::f32, memory::format_tag::nhwc);
}

memory::desc channel_desc(int64_t C) { return memory::desc({C}, memory::data_type::f32, memory::format_tag::a); }

dnnl::normalization_flags bn_flags() { return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift; }

std::string bn_key(const char* what, const memory::desc& md, double eps) {
  return KeyBuilder(what).add(std::string("use_scale|use_shift")).add(DType::float32).add(Shape(md.dims()))
      .add(eps).str();
}

dnnl::batch_normalization_forward::primitive_desc bn_fwd_pd(const memory::desc& md, double eps) {
  dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_training, md, static_cast<float>(eps), bn_flags());
  return dnnl::batch_normalization_forward::primitive_desc(d, dnnl_engine());
}

}  // namespace

void batch_norm_forward_reference(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon, Tensor& y,
                                  Tensor& mean, Tensor& var) {
  dispatch_floating(x.dtype(), "batch_norm_train kernel",
                    [&](auto tag) { forward_typed<decltype(tag)>(x, gamma, beta, epsilon, y, mean, var); });
}

void batch_norm_backward_reference(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                   const Tensor& var, double epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  dispatch_floating(x.dtype(), "batch_norm_train_grad kernel", [&](auto tag) {
    backward_typed<decltype(tag)>(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta);
  });
}

void batch_moments(const Tensor& x, Tensor& mean, Tensor& var) {
  if (x.dtype() == DType::float32 && x.numel() > 0) return moments_f32(x, mean, var);
  dispatch_floating(x.dtype(), "batch_moments kernel", [&](auto tag) { moments_typed<decltype(tag)>(x, mean, var); });
}

void batch_norm_apply(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma, const Tensor& beta,
                      double epsilon, Tensor& y) {
  dispatch_floating(x.dtype(), "batch_norm kernel",
                    [&](auto tag) { inference_typed<decltype(tag)>(x, mean, var, gamma, beta, epsilon, y); });
}

void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon, Tensor& y,
                        Tensor& mean, Tensor& var) {
  if (x.numel() == 0) return batch_norm_forward_reference(x, gamma, beta, epsilon, y, mean, var);
  batch_moments(x, mean, var);
  batch_norm_apply(x, mean, var, gamma, beta, epsilon, y);
}

void batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& var, double epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  if (x.dtype() != DType::float32 || x.numel() == 0)
    return batch_norm_backward_reference(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta);
  const memory::desc md = data_desc(x), cd = channel_desc(channels(x));
  auto prim = primitive_cache().get<dnnl::batch_normalization_backward>(bn_key("bnorm_bwd", md, epsilon), [&] {
    dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, md, md, static_cast<float>(epsilon), bn_flags());
    return std::make_shared<dnnl::batch_normalization_backward>(
        dnnl::batch_normalization_backward::primitive_desc(d, dnnl_engine(), bn_fwd_pd(md, epsilon)));
  });
  prim->execute(dnnl_stream(), {{DNNL_ARG_SRC, wrap(x, md)},
                                {DNNL_ARG_MEAN, wrap(mean, cd)},
                                {DNNL_ARG_VARIANCE, wrap(var, cd)},
                                {DNNL_ARG_DIFF_DST, wrap(grad, md)},
                                {DNNL_ARG_SCALE, wrap(gamma, cd)},
                                // oneDNN 2.6 insists on a shift argument with use_shift even
                                // though the backward never reads it; gamma's memory stands in.
                                {DNNL_ARG_SHIFT, wrap(gamma, cd)},
                                {DNNL_ARG_DIFF_SRC, wrap(dx, md)},
                                {DNNL_ARG_DIFF_SCALE, wrap(dgamma, cd)},
                                {DNNL_ARG_DIFF_SHIFT, wrap(dbeta, cd)}});
  dnnl_stream().wait();
}

}  // namespace keras::cpu

// ---- registrations: batch_moments(x) -> (mean, var); batch_norm_train(x, gamma, beta, mean, var)
// -> y; batch_norm_train_grad(grad, x, gamma, mean, var) -> (dx, dgamma, dbeta);
// batch_norm_inference(x, mean, var, gamma, beta) -> y; attr epsilon. ----
namespace keras {
namespace {
void batch_norm_train_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::batch_norm_apply(in[0], in[3], in[4], in[1], in[2], a.get_float("epsilon"), out[0]);
}
void batch_norm_inference_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::batch_norm_apply(in[0], in[1], in[2], in[3], in[4], a.get_float("epsilon"), out[0]);
}
void batch_moments_cpu(const TensorList& in, TensorList& out, const Attrs&) { cpu::batch_moments(in[0], out[0], out[1]); }
void batch_norm_train_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::batch_norm_backward(in[0], in[1], in[2], in[3], in[4], a.get_float("epsilon"), out[0], out[1], out[2]);
}
}  // namespace
KERAS_REGISTER_KERNEL(batch_norm_train, cpu, batch_norm_train_cpu);
KERAS_REGISTER_KERNEL(batch_norm_train_grad, cpu, batch_norm_train_grad_cpu);
KERAS_REGISTER_KERNEL(batch_moments, cpu, batch_moments_cpu);
KERAS_REGISTER_KERNEL(batch_norm_inference, cpu, batch_norm_inference_cpu);
}  // namespace keras
