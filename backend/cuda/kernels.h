// Launchers of the CUDA backend's own kernels (backend/cuda/kernels.cu), with a plain C++
// interface so that the op registrations stay ordinary .cpp files. Pointers are device pointers;
// every launcher queues work on `stream` and returns without waiting. Element counts may be 0.
// Types outside a launcher's list are the caller's to reject (the launcher then does nothing).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/dtype.h"

namespace keras::cuda::kernels {

constexpr int kMaxRank = 8;

// Maps a row-major flat index over `ext` to an element offset through `stride` (0 = broadcast).
struct Indexer {
  int rank = 0;
  int64_t ext[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

enum class Binary : int { add, subtract, multiply, divide };
// x (+ s), x * s, x / s, s - x, s / x, -x, relu(x)
enum class Unary : int { add_scalar, multiply_scalar, divide_scalar, rsubtract_scalar, rdivide_scalar, negative, relu };
// Activations fused into dense (dense_bias_activation) and their output-based derivatives.
enum class Act : int { linear, relu, sigmoid, tanh, elu, gelu, swish };

// out[i] = value, any dtype.
void fill(DType t, void* out, int64_t n, double value, cudaStream_t stream);
// out[i] = src[index(i)] for elements of `elem_size` bytes (1, 4 or 8): the strided copy.
void gather(int elem_size, const void* src, const Indexer& index, void* out, int64_t n, cudaStream_t stream);
// out[i] = (To) src[i], any dtype pair.
void astype(DType from, DType to, const void* src, void* out, int64_t n, cudaStream_t stream);
// out[i] = a[ia(i)] op b[ib(i)]; float32, float64, int32, int64 (divide: float types).
void binary(Binary op, DType t, const void* a, const Indexer& ia, const void* b, const Indexer& ib, void* out,
            int64_t n, cudaStream_t stream);
// out[i] = op(x[i], s); float32, float64, int32, int64 (relu: float types).
void unary(Unary op, DType t, const void* x, double s, void* out, int64_t n, cudaStream_t stream);
// dx[i] = y[i] > 0 ? dy[i] : 0 (relu_grad and the dense relu); float types.
// For the other activations: dz from dy and the activation's output y.
void activation_grad(Act act, DType t, const void* dy, const void* y, void* dx, int64_t n, cudaStream_t stream);
// y[r, j] = act(y[r, j] + bias[j]) in place; bias may be null; float types.
void bias_activation(Act act, DType t, void* y, const void* bias, int64_t rows, int64_t cols, cudaStream_t stream);
// How reduce_sum splits its work: `columns` when the kept axes are innermost (threads over
// outputs), else blocks over outputs; each output's reduction in `chunks` pieces of `chunk_len`
// (chunks > 1 needs scratch of n_out * chunks accumulators of 8 bytes, combined in fixed order,
// so sums are deterministic).
struct ReducePlan {
  bool columns = false;
  int64_t chunks = 1, chunk_len = 0;
  int64_t scratch_bytes(int64_t n_out) const { return chunks > 1 ? n_out * chunks * 8 : 0; }
};
ReducePlan plan_reduce_sum(const Indexer& kept, int64_t n_out, int64_t n_red);
// out[o] = scale * sum over r of x[kept(o) + reduced(r)], o < n_out, r < n_red; the sum of
// sum/mean/sum_to_shape. Accumulates in double for float types, int64 for int types.
void reduce_sum(DType t, const void* x, const Indexer& kept, const Indexer& reduced, void* out, int64_t n_out,
                int64_t n_red, double scale, const ReducePlan& plan, void* scratch, cudaStream_t stream);

}  // namespace keras::cuda::kernels
