// CPU kernels of layer_norm and layer_norm_grad (definitions: backend/ops_layer_norm.cpp): one
// pass per row of the last axis, rows split over OpenMP threads. A row (the model width, a few
// hundred values) stays in L1 between its passes, so the backward recomputes the row's mean and
// 1/std instead of saving them from the forward.
//
// Per row of length C, with xhat = (x - mean) * rstd and rstd = 1 / sqrt(var + eps):
//   forward   y = xhat * gamma + beta            (two-pass mean and biased variance)
//   backward  gx = g * gamma
//             dx = rstd * (gx - mean(gx) - xhat * mean(gx * xhat))
//             dgamma = sum over rows of g * xhat, dbeta = sum over rows of g
// The column sums of dgamma/dbeta go into one double array per thread, added in thread order
// after the loop, so a run with a fixed thread count is bit-for-bit reproducible.
//
// The float32 row functions are compiled for AVX-512, AVX2 and the baseline (target_clones): the
// library's default flags target the baseline x86-64, whose 4-wide vectors halve the speed of
// these memory-light loops.
#include <cmath>
#include <vector>

#include <omp.h>

#include "backend/cpu/dispatch_floating.h"
#include "backend/op_registry.h"

namespace keras::cpu {
namespace {

constexpr int64_t kParallelMin = 1 << 14;

struct RowStats {
  double mean, rstd;
};

// Mean and 1/sqrt(var + eps) of one row, two passes in T (as the composed ops computed them).
template <class T>
inline RowStats row_stats(const T* __restrict x, int64_t n, double eps) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += x[k];
  const T mean = s / static_cast<T>(n);
  T v = 0;
#pragma omp simd reduction(+ : v)
  for (int64_t k = 0; k < n; ++k) v += (x[k] - mean) * (x[k] - mean);
  const T var = v / static_cast<T>(n);
  return {mean, 1.0 / std::sqrt(static_cast<double>(var) + eps)};
}

template <class T>
inline void row_forward(const T* __restrict x, const T* __restrict gamma, const T* __restrict beta, int64_t n,
                        double eps, T* __restrict y) {
  const RowStats st = row_stats(x, n, eps);
  const T mean = static_cast<T>(st.mean), rstd = static_cast<T>(st.rstd);
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - mean) * rstd * gamma[k] + beta[k];
}

// dx of one row; adds the row's terms of dgamma and dbeta into dg, db.
template <class T>
inline void row_backward(const T* __restrict g, const T* __restrict x, const T* __restrict gamma, int64_t n, double eps,
                         T* __restrict dx, double* __restrict dg, double* __restrict db) {
  const RowStats st = row_stats(x, n, eps);
  const T mean = static_cast<T>(st.mean), rstd = static_cast<T>(st.rstd);
  T s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s1, s2)
  for (int64_t k = 0; k < n; ++k) {
    const T xhat = (x[k] - mean) * rstd;
    const T gx = g[k] * gamma[k];
    s1 += gx;
    s2 += gx * xhat;
    dg[k] += static_cast<double>(g[k] * xhat);
    db[k] += static_cast<double>(g[k]);
  }
  const T a = s1 / static_cast<T>(n), b = s2 / static_cast<T>(n);
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) dx[k] = rstd * (g[k] * gamma[k] - a - (x[k] - mean) * rstd * b);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void rows_forward_f32(
    const float* x, const float* gamma, const float* beta, int64_t r0, int64_t r1, int64_t n, double eps, float* y) {
  for (int64_t r = r0; r < r1; ++r) row_forward(x + r * n, gamma, beta, n, eps, y + r * n);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void rows_backward_f32(
    const float* g, const float* x, const float* gamma, int64_t r0, int64_t r1, int64_t n, double eps, float* dx,
    double* dg, double* db) {
  for (int64_t r = r0; r < r1; ++r) row_backward(g + r * n, x + r * n, gamma, n, eps, dx + r * n, dg, db);
}

template <class T>
void rows_forward(const T* x, const T* gamma, const T* beta, int64_t r0, int64_t r1, int64_t n, double eps, T* y) {
  if constexpr (std::is_same_v<T, float>) return rows_forward_f32(x, gamma, beta, r0, r1, n, eps, y);
  for (int64_t r = r0; r < r1; ++r) row_forward(x + r * n, gamma, beta, n, eps, y + r * n);
}

template <class T>
void rows_backward(const T* g, const T* x, const T* gamma, int64_t r0, int64_t r1, int64_t n, double eps, T* dx,
                   double* dg, double* db) {
  if constexpr (std::is_same_v<T, float>) return rows_backward_f32(g, x, gamma, r0, r1, n, eps, dx, dg, db);
  for (int64_t r = r0; r < r1; ++r) row_backward(g + r * n, x + r * n, gamma, n, eps, dx + r * n, dg, db);
}

// Rows [r0, r1) of thread `id` among `nt`: contiguous static blocks.
inline std::pair<int64_t, int64_t> block(int64_t rows, int64_t id, int64_t nt) {
  return {rows * id / nt, rows * (id + 1) / nt};
}

template <class T>
void forward_typed(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y) {
  const int64_t n = x.shape().back(), rows = n ? x.numel() / n : 0;
  const T* px = static_cast<const T*>(x.raw_data());
  const T* pg = static_cast<const T*>(gamma.raw_data());
  const T* pb = static_cast<const T*>(beta.raw_data());
  T* py = static_cast<T*>(y.raw_data());
#pragma omp parallel if (x.numel() > kParallelMin)
  {
    auto [r0, r1] = block(rows, omp_get_thread_num(), omp_get_num_threads());
    rows_forward(px, pg, pb, r0, r1, n, eps, py);
  }
}

template <class T>
void backward_typed(const Tensor& grad, const Tensor& x, const Tensor& gamma, double eps, Tensor& dx, Tensor& dgamma,
                    Tensor& dbeta) {
  const int64_t n = x.shape().back(), rows = n ? x.numel() / n : 0;
  const T* pgr = static_cast<const T*>(grad.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  const T* pga = static_cast<const T*>(gamma.raw_data());
  T* pdx = static_cast<T*>(dx.raw_data());
  const bool parallel = x.numel() > kParallelMin;
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  // Per thread: dgamma partials then dbeta partials.
  std::vector<double> partial(static_cast<size_t>(threads * 2 * n), 0.0);
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const int64_t id = omp_get_thread_num(), nt = omp_get_num_threads();
    auto [r0, r1] = block(rows, id, nt);
    double* dg = partial.data() + id * 2 * n;
    rows_backward(pgr, px, pga, r0, r1, n, eps, pdx, dg, dg + n);
  }
  T* pdg = static_cast<T*>(dgamma.raw_data());
  T* pdb = static_cast<T*>(dbeta.raw_data());
  for (int64_t k = 0; k < n; ++k) {
    double sg = 0, sb = 0;
    for (int64_t t = 0; t < threads; ++t) {
      sg += partial[static_cast<size_t>(t * 2 * n + k)];
      sb += partial[static_cast<size_t>(t * 2 * n + n + k)];
    }
    pdg[k] = static_cast<T>(sg);
    pdb[k] = static_cast<T>(sb);
  }
}

// layer_norm(x, gamma, beta) -> y; attr epsilon.
void layer_norm_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  dispatch_floating(in[0].dtype(), "layer_norm (cpu)", [&](auto tag) {
    forward_typed<decltype(tag)>(in[0], in[1], in[2], a.get_float("epsilon"), out[0]);
  });
}

// layer_norm_grad(grad, x, gamma) -> (dx, dgamma, dbeta); attr epsilon.
void layer_norm_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  dispatch_floating(in[1].dtype(), "layer_norm_grad (cpu)", [&](auto tag) {
    backward_typed<decltype(tag)>(in[0], in[1], in[2], a.get_float("epsilon"), out[0], out[1], out[2]);
  });
}

}  // namespace

KERAS_REGISTER_KERNEL(layer_norm, cpu, layer_norm_cpu);
KERAS_REGISTER_KERNEL(layer_norm_grad, cpu, layer_norm_grad_cpu);

}  // namespace keras::cpu
