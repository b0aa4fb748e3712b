// Launchers of the CUDA kernels behind the shape, indexing and extreme-reduction ops
// (shape_kernels.cu, index_kernels.cu, extreme_kernels.cu), with a plain C++ interface as
// kernels.h. Pointers are device pointers; every launcher queues work on `stream` and returns
// without waiting. Element counts may be 0 (nothing is launched). Dtypes outside a launcher's
// list are the caller's to reject. Launchers that need scratch memory ask `scratch` for it: the
// caller allocates it (Tensor::empty on the stream's device) and may free it as soon as the
// launcher returns, since every later user of the block is queued on the same stream.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "backend/cuda/kernels.h"
#include "backend/dtype.h"

namespace keras::cuda::kernels {

// Returns at least `bytes` bytes of device memory, aligned to 256 bytes.
using Scratch = std::function<void*(size_t bytes)>;

// ---- data movement (shape_kernels.cu) ----

// out[i] = src[index(i)] for i < n units of `unit` bytes (1, 2, 4, 8 or 16): the strided copy
// with the innermost run widened to the largest unit that the addresses and strides allow.
void gather_units(int unit, const void* src, const Indexer& index, void* out, int64_t n, cudaStream_t stream);
// out[index(i)] = src[i] for i < n units (the inverse placement: slice_grad, concatenate).
void scatter_units(int unit, const void* src, const Indexer& index, void* out, int64_t n, cudaStream_t stream);
// A batch of 2-D transposes through shared-memory tiles, for elements of `elem_size` bytes
// (1, 4, 8): for plane p < planes, row i < rows, column j < cols,
//   out[out_plane(p) + j * ostride + i] = in[in_plane(p) + i * istride + j].
void transpose_tiled(int elem_size, const void* in, void* out, const Indexer& in_plane, const Indexer& out_plane,
                     int64_t planes, int64_t rows, int64_t cols, int64_t istride, int64_t ostride,
                     cudaStream_t stream);

// ---- indexing (index_kernels.cu); index dtypes int32, int64 ----

// *first_bad = min(*first_bad, smallest i < n with idx[i] outside [lo, hi)). The caller sets
// *first_bad to all ones beforehand and reads it back.
void find_bad_index(DType idx_t, const void* idx, int64_t n, int64_t lo, int64_t hi, unsigned long long* first_bad,
                    cudaStream_t stream);
// out[o, j, k] = x[o, idx[j] (negative: + extent), k] over rows of `row_units` units of `unit`
// bytes; o < outer, j < n. Indices must have been checked (a bad one gives zeros, never a fault).
void take_rows(int unit, DType idx_t, const void* x, const void* idx, void* out, int64_t outer, int64_t extent,
               int64_t n, int64_t row_units, cudaStream_t stream);
// out = zeros(outer, extent, inner); out[o, idx[j], k] += g[o, j, k], summed per output element
// in increasing j (as the CPU kernel, hence bit-identical to it); deterministic, no atomics.
// Types float32, float64, int32, int64. Indices must have been checked. Returns the first
// failure of the queued calls (the memset, the radix sort, the launches).
cudaError_t take_grad(DType t, DType idx_t, const void* g, const void* idx, void* out, int64_t outer, int64_t extent,
                      int64_t n, int64_t inner, const Scratch& scratch, cudaStream_t stream);
// out[i, c] = (labels[i] == c) for i < n, c < classes, in any output dtype.
void one_hot(DType out_t, DType idx_t, const void* labels, void* out, int64_t n, int64_t classes, cudaStream_t stream);

// ---- extreme reductions (extreme_kernels.cu) ----
// Reductions index x through `kept` (the n_out outputs, row-major) and `reduced` (the n_red
// reduced elements of each output, row-major); n_red >= 1 wherever n_out >= 1. Long
// reductions run in two passes (partials per block into scratch, then a combine), so the result
// does not depend on scheduling.

// out[o] = max (min) over r of x[kept(o) + reduced(r)]; a NaN wins (NumPy). Any dtype.
void reduce_extreme(bool is_max, DType t, const void* x, const Indexer& kept, const Indexer& reduced, void* out,
                    int64_t n_out, int64_t n_red, const Scratch& scratch, cudaStream_t stream);
// out[o] = the smallest r reaching the max (min), or the first NaN's r when there is one, as the
// CPU's sequential scan. Numeric dtypes; out is int64.
void arg_extreme(bool is_max, DType t, const void* x, const Indexer& kept, const Indexer& reduced, int64_t* out,
                 int64_t n_out, int64_t n_red, const Scratch& scratch, cudaStream_t stream);
// dx[i] = x[i] == y[o] ? dy[o] / ties[o] : 0, with o = out_of(i) (i < n) and ties[o] the number
// of r with x[kept(o) + reduced(r)] == y[o]. Float types.
void extreme_grad(DType t, const void* x, const void* y, const void* dy, void* dx, const Indexer& kept,
                  const Indexer& reduced, const Indexer& out_of, int64_t n_out, int64_t n_red, int64_t n,
                  const Scratch& scratch, cudaStream_t stream);
// *out = sum of x[i]^2 in double, i < n (0 for n == 0). Float types.
void sum_squares(DType t, const void* x, int64_t n, double* out, const Scratch& scratch, cudaStream_t stream);

}  // namespace keras::cuda::kernels
