// CUDA kernels of batch normalization (contract: backend/cuda/norm_kernels.h).
//
// Channel sums: a block is (bx channels) x (by rows) threads, bx the power of two >= C up to 32,
// so that a warp reads whole rows (C = 1 or 3 still coalesce) and wide C puts 32 consecutive
// channels in a warp. Block (i, j) covers channel tile i and row chunk j; each thread accumulates
// its rows in double, the block tree-reduces over its rows in shared memory and writes one
// partial per channel. The chunking depends only on (M, C), never on the device, so results are
// reproducible across runs and GPUs.
#include <cmath>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/norm_kernels.h"

namespace keras::cuda::kernels {
namespace {

constexpr int64_t kTargetBlocks = 1024;  // enough row chunks to fill an H100 several times

struct Geometry {
  int bx = 1, by = kThreads;
  int64_t cchunks = 0, rchunks = 0, rows_per_chunk = 1;
};

Geometry geometry(int64_t M, int64_t C) {
  Geometry g;
  while (g.bx < 32 && g.bx < C) g.bx *= 2;
  g.by = kThreads / g.bx;
  g.cchunks = (C + g.bx - 1) / g.bx;
  if (M == 0) return g;
  int64_t want = kTargetBlocks / g.cchunks;
  if (want < 1) want = 1;
  int64_t max_chunks = (M + g.by - 1) / g.by;  // at least one row per thread row
  g.rchunks = want < max_chunks ? want : max_chunks;
  if (g.rchunks > 65535) g.rchunks = 65535;
  g.rows_per_chunk = (M + g.rchunks - 1) / g.rchunks;
  g.rchunks = (M + g.rows_per_chunk - 1) / g.rows_per_chunk;
  return g;
}

// Terms of the two per-channel sums; each adds its terms of element (m, c) into a and b.
template <class T>
struct ShiftedMoments {  // x - x[0, c] and its square (float32 moments, one pass)
  const T* x;
  int64_t C;
  __device__ void operator()(int64_t m, int64_t c, double& a, double& b) const {
    const double d = static_cast<double>(x[m * C + c]) - static_cast<double>(x[c]);
    a += d;
    b += d * d;
  }
};
template <class T>
struct Values {  // x (first pass of the float64 moments)
  const T* x;
  int64_t C;
  __device__ void operator()(int64_t m, int64_t c, double& a, double&) const { a += static_cast<double>(x[m * C + c]); }
};
template <class T>
struct CenteredSquares {  // (x - mean)^2 with the double mean of the first pass
  const T* x;
  const double* mean;
  int64_t C;
  __device__ void operator()(int64_t m, int64_t c, double& a, double&) const {
    const double d = static_cast<double>(x[m * C + c]) - mean[c];
    a += d * d;
  }
};
template <class T>
struct GradSums {  // g and g * (x - mean)
  const T* g;
  const T* x;
  const T* mean;
  int64_t C;
  __device__ void operator()(int64_t m, int64_t c, double& a, double& b) const {
    const double gv = static_cast<double>(g[m * C + c]);
    a += gv;
    b += gv * (static_cast<double>(x[m * C + c]) - static_cast<double>(mean[c]));
  }
};

// partial (rchunks, 2, C): the sums of block row chunk blockIdx.y.
template <class Term>
__global__ void channel_partials(Term term, int64_t M, int64_t C, int64_t rows_per_chunk, double* partial) {
  extern __shared__ double shared[];
  const int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c = blockIdx.x * int64_t{bx} + tx;
  const int64_t r0 = blockIdx.y * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < M ? r0 + rows_per_chunk : M;
  double a = 0, b = 0;
  if (c < C)
    for (int64_t m = r0 + ty; m < r1; m += by) term(m, c, a, b);
  double* sa = shared;
  double* sb = shared + bx * by;
  sa[ty * bx + tx] = a;
  sb[ty * bx + tx] = b;
  __syncthreads();
  for (int s = by / 2; s > 0; s /= 2) {  // by is a power of two
    if (ty < s) {
      sa[ty * bx + tx] += sa[(ty + s) * bx + tx];
      sb[ty * bx + tx] += sb[(ty + s) * bx + tx];
    }
    __syncthreads();
  }
  if (ty == 0 && c < C) {
    partial[(blockIdx.y * int64_t{2}) * C + c] = sa[tx];
    partial[(blockIdx.y * int64_t{2} + 1) * C + c] = sb[tx];
  }
}

// Sum `which` (0 or 1) of channel c over the row chunks, in chunk order.
__device__ double total(const double* partial, int64_t rchunks, int64_t C, int64_t c, int which) {
  double s = 0;
  for (int64_t j = 0; j < rchunks; ++j) s += partial[(j * 2 + which) * C + c];
  return s;
}

template <class Term>
void launch_partials(const Term& term, const Geometry& g, int64_t M, int64_t C, double* partial, cudaStream_t stream) {
  if (g.rchunks == 0) return;
  dim3 grid(static_cast<unsigned>(g.cchunks), static_cast<unsigned>(g.rchunks));
  dim3 block(g.bx, g.by);
  channel_partials<<<grid, block, 2 * kThreads * sizeof(double), stream>>>(term, M, C, g.rows_per_chunk, partial);
}

template <class T>
__global__ void finish_shifted_moments(const T* x, const double* partial, int64_t rchunks, int64_t M, int64_t C,
                                       T* mean, T* var) {
  KERAS_GRID_LOOP(c, C) {
    if (M == 0) {
      mean[c] = var[c] = static_cast<T>(NAN);
      continue;
    }
    const double d = total(partial, rchunks, C, c, 0) / static_cast<double>(M);
    const double v = total(partial, rchunks, C, c, 1) / static_cast<double>(M) - d * d;
    mean[c] = static_cast<T>(static_cast<double>(x[c]) + d);
    var[c] = static_cast<T>(v > 0 ? v : 0.0);
  }
}

// First pass of the two-pass moments: the double mean into `mu` and the output.
template <class T>
__global__ void finish_mean(const double* partial, int64_t rchunks, int64_t M, int64_t C, double* mu, T* mean) {
  KERAS_GRID_LOOP(c, C) {
    mu[c] = total(partial, rchunks, C, c, 0) / static_cast<double>(M);  // NaN for M == 0, as the CPU
    mean[c] = static_cast<T>(mu[c]);
  }
}

template <class T>
__global__ void finish_var(const double* partial, int64_t rchunks, int64_t M, int64_t C, T* var) {
  KERAS_GRID_LOOP(c, C) var[c] = static_cast<T>(total(partial, rchunks, C, c, 0) / static_cast<double>(M));
}

// coef (2, C): a = T(gamma / sqrt(var + eps)), b = T(beta - mean * a_unrounded), as the CPU.
template <class T>
__global__ void apply_coefficients(const T* mean, const T* var, const T* gamma, const T* beta, double eps, int64_t C,
                                   double* coef) {
  KERAS_GRID_LOOP(c, C) {
    const double s = static_cast<double>(gamma[c]) / sqrt(static_cast<double>(var[c]) + eps);
    coef[c] = static_cast<T>(s);
    coef[C + c] = static_cast<T>(__dsub_rn(static_cast<double>(beta[c]), __dmul_rn(static_cast<double>(mean[c]), s)));
  }
}

// Rounded multiply and add, never contracted to an FMA: the CPU build (no -march) rounds twice,
// and with a large mean b = beta - mean * a cancels most of x * a, so one rounding less would
// differ from the CPU by an ulp of x * a.
__device__ inline float mul_add_rn(float x, float a, float b) { return __fadd_rn(__fmul_rn(x, a), b); }
__device__ inline double mul_add_rn(double x, double a, double b) { return __dadd_rn(__dmul_rn(x, a), b); }

template <class T>
__global__ void apply_affine(const T* x, const double* coef, int64_t n, int64_t C, T* y) {
  KERAS_GRID_LOOP(i, n) {
    const int64_t c = i % C;
    y[i] = mul_add_rn(x[i], static_cast<T>(coef[c]), static_cast<T>(coef[C + c]));
  }
}

// dgamma, dbeta and coef (3, C) of dx = A g + B (x - mean) + K.
template <class T>
__global__ void finish_backward(const double* partial, int64_t rchunks, int64_t M, int64_t C, const T* gamma,
                                const T* var, double eps, T* dgamma, T* dbeta, double* coef) {
  KERAS_GRID_LOOP(c, C) {
    const double rstd = 1.0 / sqrt(static_cast<double>(var[c]) + eps);
    const double db = total(partial, rchunks, C, c, 0);
    const double dg = total(partial, rchunks, C, c, 1) * rstd;
    dbeta[c] = static_cast<T>(db);
    dgamma[c] = static_cast<T>(dg);
    const double a = static_cast<double>(gamma[c]) * rstd, inv_m = 1.0 / static_cast<double>(M);
    coef[c] = a;
    coef[C + c] = -a * rstd * dg * inv_m;
    coef[2 * C + c] = -a * db * inv_m;
  }
}

template <class T>
__global__ void backward_dx(const T* g, const T* x, const T* mean, const double* coef, int64_t n, int64_t C, T* dx) {
  KERAS_GRID_LOOP(i, n) {
    const int64_t c = i % C;
    const double d = static_cast<double>(x[i]) - static_cast<double>(mean[c]);
    dx[i] = static_cast<T>(coef[c] * static_cast<double>(g[i]) + coef[C + c] * d + coef[2 * C + c]);
  }
}

}  // namespace

int64_t batch_norm_workspace(int64_t M, int64_t C) {
  const Geometry g = geometry(M, C);
  return g.rchunks * 2 * C + 3 * C + 1;
}

void batch_moments(DType t, const void* x, int64_t M, int64_t C, void* mean, void* var, double* workspace,
                   cudaStream_t stream) {
  if (C == 0) return;
  const Geometry g = geometry(M, C);
  double* partial = workspace;
  double* mu = workspace + g.rchunks * 2 * C;
  if (t == DType::float32) {
    const float* px = static_cast<const float*>(x);
    launch_partials(ShiftedMoments<float>{px, C}, g, M, C, partial, stream);
    finish_shifted_moments<<<blocks_for(C), kThreads, 0, stream>>>(px, partial, g.rchunks, M, C,
                                                                     static_cast<float*>(mean),
                                                                     static_cast<float*>(var));
  } else if (t == DType::float64) {
    const double* px = static_cast<const double*>(x);
    launch_partials(Values<double>{px, C}, g, M, C, partial, stream);
    finish_mean<<<blocks_for(C), kThreads, 0, stream>>>(partial, g.rchunks, M, C, mu, static_cast<double*>(mean));
    launch_partials(CenteredSquares<double>{px, mu, C}, g, M, C, partial, stream);
    finish_var<<<blocks_for(C), kThreads, 0, stream>>>(partial, g.rchunks, M, C, static_cast<double*>(var));
  }
}

void batch_norm_apply(DType t, const void* x, int64_t M, int64_t C, const void* mean, const void* var,
                      const void* gamma, const void* beta, double epsilon, void* y, double* workspace,
                      cudaStream_t stream) {
  if (C == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    apply_coefficients<<<blocks_for(C), kThreads, 0, stream>>>(
        static_cast<const T*>(mean), static_cast<const T*>(var), static_cast<const T*>(gamma),
        static_cast<const T*>(beta), epsilon, C, workspace);
    const int64_t n = M * C;
    if (n > 0)
      apply_affine<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), workspace, n, C,
                                                           static_cast<T*>(y));
  });
}

void batch_norm_backward(DType t, const void* grad, const void* x, int64_t M, int64_t C, const void* gamma,
                         const void* mean, const void* var, double epsilon, void* dx, void* dgamma, void* dbeta,
                         double* workspace, cudaStream_t stream) {
  if (C == 0) return;
  const Geometry g = geometry(M, C);
  double* partial = workspace;
  double* coef = workspace + g.rchunks * 2 * C;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    const T* pg = static_cast<const T*>(grad);
    const T* px = static_cast<const T*>(x);
    const T* pm = static_cast<const T*>(mean);
    launch_partials(GradSums<T>{pg, px, pm, C}, g, M, C, partial, stream);
    finish_backward<<<blocks_for(C), kThreads, 0, stream>>>(partial, g.rchunks, M, C, static_cast<const T*>(gamma),
                                                            static_cast<const T*>(var), epsilon,
                                                            static_cast<T*>(dgamma), static_cast<T*>(dbeta), coef);
    const int64_t n = M * C;
    if (n > 0) backward_dx<<<blocks_for(n), kThreads, 0, stream>>>(pg, px, pm, coef, n, C, static_cast<T*>(dx));
  });
}

}  // namespace keras::cuda::kernels
