// Launchers of the CUDA batch-normalization kernels (backend/cuda/norm_kernels.cu), used by
// backend/cuda/norm_ops.cpp. x is viewed as (M, C) row-major with channels last, as the ops of
// backend/ops_norm.cpp define it: every axis but the last is reduced.
//
// Per-channel sums are deterministic two-pass reductions: blocks (channel tile, row chunk) write
// double partial sums to a workspace, then one thread per channel adds them in a fixed order. No
// atomics, so a result depends only on the shape and the data. Pointers are device pointers; the
// dtype `t` is float32 or float64 (others do nothing: the ops reject them in their shape
// functions). Every launcher queues work on `stream` and returns without waiting.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/dtype.h"

namespace keras::cuda::kernels {

// Doubles of workspace every launcher below needs for an (M, C) problem.
int64_t batch_norm_workspace(int64_t M, int64_t C);

// mean, var (C,) of x (M, C): biased variance. float32: one pass in double, shifted by the first
// row (as the CPU's float32 kernel); float64: two passes in double (as the CPU's reference).
// M == 0 gives NaN statistics, as the CPU. C must be > 0.
void batch_moments(DType t, const void* x, int64_t M, int64_t C, void* mean, void* var, double* workspace,
                   cudaStream_t stream);

// y = x * a + b per channel with a = gamma / sqrt(var + eps), b = beta - mean * a, both rounded
// to t before the elementwise pass (as the CPU's batch_norm_apply).
void batch_norm_apply(DType t, const void* x, int64_t M, int64_t C, const void* mean, const void* var,
                      const void* gamma, const void* beta, double epsilon, void* y, double* workspace,
                      cudaStream_t stream);

// Gradients of y = (x - mean) * rstd * gamma + beta with mean, var the batch's moments of x:
// dbeta = sum g, dgamma = sum g * xhat, dx = gamma * rstd * (g - dbeta / M - xhat * dgamma / M),
// sums in double.
void batch_norm_backward(DType t, const void* grad, const void* x, int64_t M, int64_t C, const void* gamma,
                         const void* mean, const void* var, double epsilon, void* dx, void* dgamma, void* dbeta,
                         double* workspace, cudaStream_t stream);

}  // namespace keras::cuda::kernels
