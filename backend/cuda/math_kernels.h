// Launchers of the CUDA kernels of the elementwise maths (math_kernels.cu) and of the activations
// (activation_kernels.cu), with a plain C++ interface for the op registrations in math_ops.cpp and
// activation_ops.cpp. Pointers are device pointers of contiguous buffers (broadcast operands go
// through an Indexer); every launcher queues work on `stream` and returns without waiting; element
// counts may be 0. Each formula is the CPU kernel's (backend/cpu/elementwise_kernels.cpp,
// activation_kernels.cpp), NaN handling included. Dtypes outside a launcher's list are the caller's
// to reject (the launcher then does nothing).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/kernels.h"
#include "backend/dtype.h"

namespace keras::cuda::kernels {

// abs, sign, square: numeric. exp, log, sqrt: float types. pow_scalar: x ^ p0 (p0 converted to
// x's dtype first, as the CPU does). clip: min(max(x, p0), p1) with NaN passed through.
enum class MathUnary : int { abs, sign, square, exp, log, sqrt, pow_scalar, clip };
// maximum/minimum propagate a NaN of either operand; pow is std::pow in the operands' type
// (double for the integer types, then truncated).
enum class MathBinary : int { maximum, minimum, pow };
enum class Compare : int { equal, not_equal, less, less_equal, greater, greater_equal };

// out[i] = op(x[i]; p0, p1); float32, float64, int32, int64.
void math_unary(MathUnary op, DType t, const void* x, double p0, double p1, void* out, int64_t n,
                cudaStream_t stream);
// out[i] = op(a[ia(i)], b[ib(i)]); float32, float64, int32, int64.
void math_binary(MathBinary op, DType t, const void* a, const Indexer& ia, const void* b, const Indexer& ib,
                 void* out, int64_t n, cudaStream_t stream);
// out[i] (bool) = a[ia(i)] op b[ib(i)]; every dtype, bool included.
void compare(Compare op, DType t, const void* a, const Indexer& ia, const void* b, const Indexer& ib, bool* out,
             int64_t n, cudaStream_t stream);
// out[i] = cond[ic(i)] ? a[ia(i)] : b[ib(i)]; every dtype for a, b and out.
void where(DType t, const bool* cond, const Indexer& ic, const void* a, const Indexer& ia, const void* b,
           const Indexer& ib, void* out, int64_t n, cudaStream_t stream);

// The activations with their own op (relu has its own kernels in kernels.cu).
enum class Activation : int {
  leaky_relu, relu6, elu, selu, gelu_erf, gelu_tanh, sigmoid, hard_sigmoid, hard_silu, tanh, softplus, softsign,
  silu, exponential
};

// True when the backward op receives the forward output y (sigmoid, tanh, exponential), else x.
bool activation_uses_output(Activation a);
// out[i] = f(x[i]; alpha); alpha is leaky_relu's slope and elu's alpha, ignored elsewhere. Float types.
void activation_forward(Activation a, DType t, const void* x, double alpha, void* out, int64_t n,
                        cudaStream_t stream);
// out[i] = dy[i] * f'(s[i]) where s is y or x as activation_uses_output says. Float types.
void activation_backward(Activation a, DType t, const void* dy, const void* s, double alpha, void* out, int64_t n,
                         cudaStream_t stream);

}  // namespace keras::cuda::kernels
