// CPU kernels of the batch-normalization ops (definitions: backend/ops_norm.cpp).
//
// Training forward = batch_moments, then the per-channel affine map y = x * a + b (the loop of
// batch_norm_inference); backward = one pass of per-channel sums, one pass writing dx. float32
// runs the row loops of norm_rows.h (float sums over blocks of rows, double across blocks), and so
// do bfloat16 activations beside float32 statistics (mixed_bfloat16, registered as bf16 kernels
// at the end); float64 runs the reference loops (double throughout, two passes for the moments),
// which tests compare against.
//
// No oneDNN here: measured on the 2-core AMD EPYC (AVX2), one thread, process CPU time, x
// (64, 32, 32, 16): oneDNN 2.6's fused forward_training 0.50 ms against 0.21 ms for these
// moments + 0.26 ms for the affine map, and its backward 0.98 ms against 0.72 ms; at
// (64, 16, 16, 32) 0.53 ms against 0.27 ms. Running the moments as their own op is what lets
// the backward reuse them (ops_norm.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "backend/bf16_compute.h"
#include "backend/cpu/bf16_convert.h"
#include "backend/cpu/norm_reference.h"
#include "backend/cpu/norm_rows.h"
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
constexpr int64_t kRowsPerTask = 256;  // rows of one parallel task in the single-pass loops

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

// The per-channel affine map of the normalization, y = x * a + b, in T as batch_norm_apply
// computes it (the fused ReLU's backward recomputes y from x with the same a and b).
template <class T>
void affine_of(const Tensor& mean, const Tensor& var, const Tensor& gamma, const Tensor& beta, double eps,
               std::vector<T>& a, std::vector<T>& b) {
  const int64_t C = mean.numel();
  a.resize(C), b.resize(C);
  for (int64_t c = 0; c < C; ++c) {
    const double s = static_cast<const T*>(gamma.raw_data())[c] / std::sqrt(static_cast<const T*>(var.raw_data())[c] + eps);
    a[c] = static_cast<T>(s);
    b[c] = static_cast<T>(static_cast<const T*>(beta.raw_data())[c] - static_cast<const T*>(mean.raw_data())[c] * s);
  }
}

// The ReLU after a normalization: the gradient passes where 0 < y < hi (hi = 6 for relu6).
struct ReluWindow {
  const Tensor* beta = nullptr;  // null: no ReLU
  double hi = 0;
};

// With xhat = (x - mean) * rstd: dbeta = sum g, dgamma = sum g * xhat,
// dx = gamma * rstd / M * (M * g - dbeta - xhat * dgamma); g masked by the ReLU window if any.
template <class T>
void backward_typed(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& var,
                    double eps, Tensor& dx, Tensor& dgamma, Tensor& dbeta, ReluWindow relu = {}) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const T* pgr = static_cast<const T*>(grad.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  const T* pga = static_cast<const T*>(gamma.raw_data());
  const T* pm = static_cast<const T*>(mean.raw_data());
  const T* pv = static_cast<const T*>(var.raw_data());
  T* pdx = static_cast<T*>(dx.raw_data());
  std::vector<T> a, b;
  if (relu.beta) affine_of<T>(mean, var, gamma, *relu.beta, eps, a, b);
  auto g_at = [&](int64_t m, int64_t c) -> double {
    const T g = pgr[m * C + c];
    if (!relu.beta) return g;
    const T y = px[m * C + c] * a[c] + b[c];
    return y > T(0) && y < relu.hi ? g : T(0);
  };
  std::vector<double> rstd(C), db(C, 0.0), dg(C, 0.0);
  for (int64_t c = 0; c < C; ++c) rstd[c] = 1.0 / std::sqrt(static_cast<double>(pv[c]) + eps);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      double g = g_at(m, c);
      db[c] += g;
      dg[c] += g * (px[m * C + c] - pm[c]) * rstd[c];
    }
  const double inv_m = 1.0 / static_cast<double>(M);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      double xhat = (px[m * C + c] - pm[c]) * rstd[c];
      pdx[m * C + c] = static_cast<T>(pga[c] * rstd[c] * (g_at(m, c) - inv_m * db[c] - xhat * inv_m * dg[c]));
    }
  for (int64_t c = 0; c < C; ++c) {
    static_cast<T*>(dgamma.raw_data())[c] = static_cast<T>(dg[c]);
    static_cast<T*>(dbeta.raw_data())[c] = static_cast<T>(db[c]);
  }
}

// Per-thread partial sums (`count` arrays of C per thread), added up in thread order after the
// parallel region rather than as threads finish: the same bits on every run with a thread count.
struct ThreadPartials {
  std::vector<std::vector<double>> parts;
  // Inside the parallel region, by every thread: its own `count` arrays (sized once, by one thread).
  std::vector<double>* mine(int64_t count, int64_t C) {
#pragma omp single
    parts.assign(static_cast<size_t>(count * omp_get_num_threads()), std::vector<double>(static_cast<size_t>(C), 0.0));
    return &parts[static_cast<size_t>(count * omp_get_thread_num())];
  }
  // After it: acc[k][c] += every thread's array k, thread 0 first.
  void add_to(std::initializer_list<std::vector<double>*> acc) const {
    const size_t count = acc.size();
    for (size_t i = 0; i < parts.size(); ++i) {
      std::vector<double>& a = **(acc.begin() + i % count);
      for (size_t c = 0; c < a.size(); ++c) a[c] += parts[i][c];
    }
  }
};

// Rows are split over threads, each with its own per-channel partial sums.
template <class T>
void moments_typed(const Tensor& x, Tensor& mean, Tensor& var) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const T* px = static_cast<const T*>(x.raw_data());
  std::vector<double> mu(C, 0.0), v(C, 0.0);
  auto reduce = [&](auto&& term, std::vector<double>& acc) {
    ThreadPartials partials;
#pragma omp parallel if (M * C > (1 << 15))
    {
      std::vector<double>& part = *partials.mine(1, C);
#pragma omp for schedule(static) nowait
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < C; ++c) part[c] += term(px[m * C + c], c);
    }
    partials.add_to({&acc});
  };
  reduce([](T value, int64_t) { return static_cast<double>(value); }, mu);
  for (int64_t c = 0; c < C; ++c) mu[c] /= static_cast<double>(M);
  reduce([&](T value, int64_t c) { double d = value - mu[c]; return d * d; }, v);
  for (int64_t c = 0; c < C; ++c) {
    static_cast<T*>(mean.raw_data())[c] = static_cast<T>(mu[c]);
    static_cast<T*>(var.raw_data())[c] = static_cast<T>(v[c] / static_cast<double>(M));
  }
}

// Two per-channel sums over the rows of an (M, C) problem, for the float32 kernels: each thread
// accumulates blocks of kRows rows in float (vectorised over channels) and adds each block's sums
// into double, so rounding stays at the level of one block. `rows(m, count, a1, a2)` adds the
// terms of rows [m, m + count) into the float arrays a1 and a2 (C each).
template <class Rows>
void channel_sums(int64_t M, int64_t C, Rows&& rows, std::vector<double>& s1, std::vector<double>& s2) {
  constexpr int64_t kRows = 128;
  s1.assign(C, 0.0);
  s2.assign(C, 0.0);
  ThreadPartials partials;
#pragma omp parallel if (M * C > (1 << 15))
  {
    std::vector<float> b1(C), b2(C);
    std::vector<double>* t = partials.mine(2, C);
    std::vector<double>& t1 = t[0];
    std::vector<double>& t2 = t[1];
    const int64_t blocks = (M + kRows - 1) / kRows;
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    for (int64_t b = blocks * id / nt, end = blocks * (id + 1) / nt; b < end; ++b) {
      std::fill(b1.begin(), b1.end(), 0.f);
      std::fill(b2.begin(), b2.end(), 0.f);
      const int64_t m = b * kRows;
      rows(m, std::min(kRows, M - m), b1.data(), b2.data());
      for (int64_t c = 0; c < C; ++c) t1[c] += b1[c], t2[c] += b2[c];
    }
  }
  partials.add_to({&s1, &s2});
}

// One pass, shifted by the first row so that a large mean does not swamp the variance:
// var = E[(x - s)^2] - E[x - s]^2, clamped at 0.
// S: float, or uint16_t for bfloat16 x (statistics in float32 all the same).
template <class S>
void moments_f32(const Tensor& x, Tensor& mean, Tensor& var) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const S* px = static_cast<const S*>(x.raw_data());
  std::vector<float> first_row(C);
  for (int64_t c = 0; c < C; ++c) first_row[c] = widen<float>(px[c]);
  const float* shift = first_row.data();
  std::vector<double> s1, s2;
  channel_sums(M, C, [&](int64_t m, int64_t count, float* a1, float* a2) {
    moment_rows(px + m * C, count, C, shift, a1, a2);
  }, s1, s2);
  for (int64_t c = 0; c < C; ++c) {
    const double d = s1[c] / static_cast<double>(M);
    mean.data<float>()[c] = static_cast<float>(shift[c] + d);
    var.data<float>()[c] = static_cast<float>(std::max(0.0, s2[c] / static_cast<double>(M) - d * d));
  }
}

// Two passes: dbeta = sum g and sum g * (x - mean), then dx = A g + B x + K per channel (the
// reference's formula with the per-channel factors folded).
// With a ReLU window the incoming gradient is masked where y = x * a + b (recomputed) falls
// outside it, in both passes: the ReLU's gradient pass is gone.
// S as moments_f32's: the gradient, x and dx stored as S, everything else float32.
template <bool kRelu, class S>
void backward_f32(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& var,
                  double eps, Tensor& dx, Tensor& dgamma, Tensor& dbeta, ReluWindow relu = {}) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  const S* pg = static_cast<const S*>(grad.raw_data());
  const S* px = static_cast<const S*>(x.raw_data());
  const float* mu = mean.data<float>();
  std::vector<float> ya, yb;
  ReluRows window;  // the fused ReLU's mask, recomputed from x (norm_rows.h)
  if (kRelu) {
    affine_of<float>(mean, var, gamma, *relu.beta, eps, ya, yb);
    window = {ya.data(), yb.data(), static_cast<float>(relu.hi)};
  }
  std::vector<double> s1, s2;
  channel_sums(M, C, [&](int64_t m, int64_t count, float* a1, float* a2) {
    grad_sum_rows(pg + m * C, px + m * C, count, C, mu, window, a1, a2);
  }, s1, s2);
  std::vector<float> A(C), B(C), K(C);
  const double inv_m = 1.0 / static_cast<double>(M);
  for (int64_t c = 0; c < C; ++c) {
    const double rstd = 1.0 / std::sqrt(static_cast<double>(var.data<float>()[c]) + eps);
    const double db = s1[c], dg = s2[c] * rstd, a = gamma.data<float>()[c] * rstd;
    dbeta.data<float>()[c] = static_cast<float>(db);
    dgamma.data<float>()[c] = static_cast<float>(dg);
    // dx = a * (g - db / M - (x - mean) * rstd * dg / M)
    A[c] = static_cast<float>(a);
    B[c] = static_cast<float>(-a * rstd * dg * inv_m);
    K[c] = static_cast<float>(a * inv_m * (rstd * dg * mu[c] - db));
  }
  S* pd = static_cast<S*>(dx.raw_data());
#pragma omp parallel for if (M * C > (1 << 15)) schedule(static)
  for (int64_t m = 0; m < M; m += kRowsPerTask)
    grad_dx_rows(pg + m * C, px + m * C, pd + m * C, std::min(kRowsPerTask, M - m), C, A.data(), B.data(), K.data(),
                 window);
}

// y = x * a + b, clamped to [0, hi] when relu_hi is set (the fused ReLU / ReLU6); computed in T,
// x and y stored as S (bfloat16 x: S = uint16_t, T = float). With a `residual` (then relu_hi is
// infinity): relu(y + residual), y and the sum rounded to S as the separate ops round them.
template <class T, class S = T>
void inference_typed(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma, const Tensor& beta,
                     double eps, Tensor& y, std::optional<double> relu_hi = std::nullopt,
                     const Tensor* residual = nullptr) {
  const int64_t C = channels(x), M = C ? x.numel() / C : 0;
  std::vector<T> a, b;
  affine_of<T>(mean, var, gamma, beta, eps, a, b);
  const S* px = static_cast<const S*>(x.raw_data());
  S* py = static_cast<S*>(y.raw_data());
  if (residual) {
    const S* pr = static_cast<const S*>(residual->raw_data());
    if constexpr (std::is_same_v<T, float>) {
#pragma omp parallel for if (M * C > (1 << 15)) schedule(static)
      for (int64_t m = 0; m < M; m += kRowsPerTask)
        affine_add_relu_rows(px + m * C, pr + m * C, py + m * C, std::min(kRowsPerTask, M - m), C, a.data(), b.data());
    } else {
#pragma omp parallel for if (M * C > (1 << 15)) schedule(static)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < C; ++c) {
          const T v = widen<T>(narrow<S>(widen<T>(px[m * C + c]) * a[c] + b[c])) + widen<T>(pr[m * C + c]);
          py[m * C + c] = narrow<S>(v > T(0) || v != v ? v : T(0));
        }
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {  // float32 or bfloat16 activations: norm_rows.h
    const float hi = relu_hi ? static_cast<float>(*relu_hi) : 0.f;
#pragma omp parallel for if (M * C > (1 << 15)) schedule(static)
    for (int64_t m = 0; m < M; m += kRowsPerTask)
      affine_rows(px + m * C, py + m * C, std::min(kRowsPerTask, M - m), C, a.data(), b.data(), relu_hi.has_value(), hi);
    return;
  }
  const T* pa = a.data();
  const T* pb = b.data();
  if (relu_hi) {
    const T hi = static_cast<T>(*relu_hi);
#pragma omp parallel for if (M * C > (1 << 15)) schedule(static)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < C; ++c) {
        const T v = widen<T>(px[m * C + c]) * pa[c] + pb[c];
        py[m * C + c] = narrow<S>(v > T(0) ? (v < hi ? v : hi) : (v != v ? v : T(0)));  // NaN stays, as in ReLU
      }
    return;
  }
#pragma omp parallel for if (M * C > (1 << 15)) schedule(static)
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) py[m * C + c] = narrow<S>(widen<T>(px[m * C + c]) * pa[c] + pb[c]);
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
  if (x.dtype() == DType::float32 && x.numel() > 0) return moments_f32<float>(x, mean, var);
  if (x.dtype() == DType::bfloat16 && x.numel() > 0) return moments_f32<uint16_t>(x, mean, var);
  dispatch_floating(x.dtype(), "batch_moments kernel", [&](auto tag) { moments_typed<decltype(tag)>(x, mean, var); });
}

void batch_norm_apply(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma, const Tensor& beta,
                      double epsilon, Tensor& y) {
  if (x.dtype() == DType::bfloat16)
    return inference_typed<float, uint16_t>(x, mean, var, gamma, beta, epsilon, y);
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
  if (x.dtype() == DType::bfloat16)
    return backward_f32<false, uint16_t>(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta);
  if (x.dtype() != DType::float32 || x.numel() == 0)
    return batch_norm_backward_reference(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta);
  backward_f32<false, float>(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta);
}

void batch_norm_apply_relu(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                           const Tensor& beta, double epsilon, double hi, Tensor& y) {
  if (x.dtype() == DType::bfloat16)
    return inference_typed<float, uint16_t>(x, mean, var, gamma, beta, epsilon, y, hi);
  dispatch_floating(x.dtype(), "batch_norm_relu kernel",
                    [&](auto tag) { inference_typed<decltype(tag)>(x, mean, var, gamma, beta, epsilon, y, hi); });
}

void batch_norm_apply_add_relu(const Tensor& x, const Tensor& residual, const Tensor& mean, const Tensor& var,
                               const Tensor& gamma, const Tensor& beta, double epsilon, Tensor& z) {
  if (x.dtype() == DType::bfloat16)
    return inference_typed<float, uint16_t>(x, mean, var, gamma, beta, epsilon, z, std::nullopt, &residual);
  dispatch_floating(x.dtype(), "batch_norm_add_relu kernel", [&](auto tag) {
    inference_typed<decltype(tag)>(x, mean, var, gamma, beta, epsilon, z, std::nullopt, &residual);
  });
}

void batch_norm_relu_backward(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              const Tensor& mean, const Tensor& var, double epsilon, double hi, Tensor& dx,
                              Tensor& dgamma, Tensor& dbeta) {
  const ReluWindow relu{&beta, hi};
  if (x.dtype() == DType::float32 && x.numel() > 0)
    return backward_f32<true, float>(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta, relu);
  if (x.dtype() == DType::bfloat16)
    return backward_f32<true, uint16_t>(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta, relu);
  dispatch_floating(x.dtype(), "batch_norm_relu_train_grad kernel", [&](auto tag) {
    backward_typed<decltype(tag)>(grad, x, gamma, mean, var, epsilon, dx, dgamma, dbeta, relu);
  });
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
// batch_norm_relu_train(x, gamma, beta, mean, var) -> y; batch_norm_relu_train_grad(grad, x,
// gamma, beta, mean, var) -> (dx, dgamma, dbeta); attrs epsilon, activation (relu | relu6).
double relu_hi(const Attrs& a) {
  return a.get_string("activation") == "relu6" ? 6.0 : std::numeric_limits<double>::infinity();
}
void batch_norm_relu_train_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::batch_norm_apply_relu(in[0], in[3], in[4], in[1], in[2], a.get_float("epsilon"), relu_hi(a), out[0]);
}
void batch_norm_relu_train_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::batch_norm_relu_backward(in[0], in[1], in[2], in[3], in[4], in[5], a.get_float("epsilon"), relu_hi(a), out[0], out[1],
                                out[2]);
}
// batch_norm_add_relu_train(x, residual, gamma, beta, mean, var) -> z; attr epsilon.
void batch_norm_add_relu_train_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::batch_norm_apply_add_relu(in[0], in[1], in[4], in[5], in[2], in[3], a.get_float("epsilon"), out[0]);
}
// The bfloat16 kernels (backend/bf16_compute.h): the first `activations` inputs bfloat16, the
// statistics and weights float32 (what BatchNormalization passes under mixed_bfloat16) run the
// loops above reading and writing bfloat16 in one pass; other mixes are converted.
KernelFn bf16(KernelFn f32, size_t activations) {
  return [f32, activations](const TensorList& in, TensorList& out, const Attrs& a) {
    bool direct = in[0].numel() > 0;
    for (size_t i = activations; i < in.size(); ++i) direct = direct && in[i].dtype() == DType::float32;
    if (direct) f32(in, out, a);
    else run_bf16_in_float32(f32, in, out, a);
  };
}
}  // namespace
KERAS_REGISTER_BF16_KERNEL(batch_norm_relu_train, cpu, bf16(batch_norm_relu_train_cpu, 1));
KERAS_REGISTER_BF16_KERNEL(batch_norm_relu_train_grad, cpu, bf16(batch_norm_relu_train_grad_cpu, 2));
KERAS_REGISTER_BF16_KERNEL(batch_norm_train, cpu, bf16(batch_norm_train_cpu, 1));
KERAS_REGISTER_BF16_KERNEL(batch_norm_train_grad, cpu, bf16(batch_norm_train_grad_cpu, 2));
KERAS_REGISTER_BF16_KERNEL(batch_moments, cpu, bf16(batch_moments_cpu, 1));
KERAS_REGISTER_BF16_KERNEL(batch_norm_inference, cpu, bf16(batch_norm_inference_cpu, 1));
KERAS_REGISTER_KERNEL(moving_average_update, cpu, [](const TensorList& in, TensorList&, const Attrs& a) {
  // The factors rounded to the dtype as multiply_scalar rounds its scalar. Two-byte tensors never
  // reach an in-place op (run_op refuses them).
  const double m = a.get_float("momentum");
  void* moving = const_cast<Tensor&>(in[0]).raw_data();  // the op's input written in place
  if (in[0].dtype() == DType::float64)
    return cpu::moving_average_rows(static_cast<double*>(moving), in[1].data<double>(), in[0].numel(), m, 1.0 - m);
  cpu::moving_average_rows(static_cast<float*>(moving), in[1].data<float>(), in[0].numel(), static_cast<float>(m),
                           static_cast<float>(1.0 - m));
});
KERAS_REGISTER_BF16_KERNEL(batch_norm_add_relu_train, cpu, bf16(batch_norm_add_relu_train_cpu, 2));
KERAS_REGISTER_KERNEL(batch_norm_add_relu_train, cpu, batch_norm_add_relu_train_cpu);
KERAS_REGISTER_KERNEL(batch_norm_relu_train, cpu, batch_norm_relu_train_cpu);
KERAS_REGISTER_KERNEL(batch_norm_relu_train_grad, cpu, batch_norm_relu_train_grad_cpu);
KERAS_REGISTER_KERNEL(batch_norm_train, cpu, batch_norm_train_cpu);
KERAS_REGISTER_KERNEL(batch_norm_train_grad, cpu, batch_norm_train_grad_cpu);
KERAS_REGISTER_KERNEL(batch_moments, cpu, batch_moments_cpu);
KERAS_REGISTER_KERNEL(batch_norm_inference, cpu, batch_norm_inference_cpu);
}  // namespace keras
