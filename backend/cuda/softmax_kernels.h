// Launchers of the CUDA softmax kernels (backend/cuda/softmax_kernels.cu), used by
// backend/cuda/softmax_ops.cpp. A tensor is viewed as (outer, len, inner) around the softmax axis;
// a "row" is the len elements of one (outer, inner) pair, stride inner apart.
//
// Rows with inner == 1 (the last axis) get one warp each, lanes striding over the row; other
// axes get one thread per row, so that neighbouring threads read neighbouring columns. Maxima
// are taken in the dtype, exponentials in the dtype, sums in double, warp reductions by a
// butterfly (every lane ends with the same, order-fixed value): results are deterministic.
// Pointers are device pointers; t is float32 or float64 (others do nothing). Every launcher
// queues work on `stream` and returns without waiting; any extent may be 0.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/dtype.h"

namespace keras::cuda::kernels {

// y = softmax(x) or, with log, x - max - log(sum exp(x - max)), over the middle axis.
void softmax_forward(DType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, bool log,
                     cudaStream_t stream);
// From the forward output y: softmax dx = y * (g - sum(g * y)); log_softmax dx = g - exp(y) * sum(g).
void softmax_backward(DType t, const void* grad, const void* y, void* dx, int64_t outer, int64_t len, int64_t inner,
                      bool log, cudaStream_t stream);

// Softmax over rows of `len` (the last axis) of x with mask (bool, x's shape; true = keep):
// masked scores become -1e9 (replace) or x - 1e9 in the dtype (subtract); zero_masked then zeroes
// the masked probabilities. A fully masked row is thus uniform (replace), the softmax of its
// shifted scores (subtract), or zeros (zero_masked), exactly as the CPU kernel.
void masked_softmax_forward(DType t, const void* x, const bool* mask, void* y, int64_t rows, int64_t len,
                            bool subtract, bool zero_masked, cudaStream_t stream);
// dx of the above from (grad, x, mask), the probabilities recomputed from x: with g' = grad zeroed
// at masked entries when zero_masked, dz = p * (g' - sum(g' * p)); dx = dz where kept or with
// subtract, else 0.
void masked_softmax_backward(DType t, const void* grad, const void* x, const bool* mask, void* dx, int64_t rows,
                             int64_t len, bool subtract, bool zero_masked, cudaStream_t stream);

}  // namespace keras::cuda::kernels
