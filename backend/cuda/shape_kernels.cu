// The data-moving kernels of transpose, slice, slice_grad and concatenate (launchers in
// shape_kernels.h). They move bytes without looking at them: one template per unit size serves
// every dtype, and the callers widen contiguous runs to 8- or 16-byte units where alignment
// allows, so that a thread moves a whole vector per load.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/shape_kernels.h"

namespace keras::cuda::kernels {
namespace {

template <class U>
__global__ void gather_units_kernel(const U* src, Indexer ix, U* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = src[offset_of(ix, i)];
}

template <class U>
__global__ void scatter_units_kernel(const U* src, Indexer ix, U* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[offset_of(ix, i)] = src[i];
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per tile column: each thread moves kTile / kTileRows elements

// One kTile x kTile tile per block iteration: read along the input's contiguous axis into shared
// memory, write along the output's contiguous axis, so both global accesses are coalesced. The
// extra column keeps the column reads free of shared-memory bank conflicts.
template <class U>
__global__ void transpose_tiled_kernel(const U* in, U* out, Indexer in_plane, Indexer out_plane, int64_t planes,
                                       int64_t rows, int64_t cols, int64_t istride, int64_t ostride) {
  __shared__ U tile[kTile][kTile + 1];
  const int64_t tiles_r = (rows + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
  const int64_t per_plane = tiles_r * tiles_c;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  // The loop bound is the same for every thread of the block, so the barriers are uniform.
  for (int64_t t = blockIdx.x; t < planes * per_plane; t += gridDim.x) {
    const int64_t p = t / per_plane, rc = t % per_plane;
    const int64_t r0 = (rc / tiles_c) * kTile, c0 = (rc % tiles_c) * kTile;
    const U* src = in + offset_of(in_plane, p);
    U* dst = out + offset_of(out_plane, p);
    for (int k = ty; k < kTile; k += kTileRows) {
      const int64_t i = r0 + k, j = c0 + tx;
      if (i < rows && j < cols) tile[k][tx] = src[i * istride + j];
    }
    __syncthreads();
    for (int k = ty; k < kTile; k += kTileRows) {
      const int64_t j = c0 + k, i = r0 + tx;
      if (i < rows && j < cols) dst[j * ostride + i] = tile[tx][k];
    }
    __syncthreads();
  }
}

// Calls f(U{}) with an unsigned type of `unit` bytes (uint4 for 16).
template <class F>
void dispatch_unit(int unit, F&& f) {
  switch (unit) {
    case 1: f(uint8_t{}); return;
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
    case 16: f(uint4{}); return;
    default: return;
  }
}

}  // namespace

void gather_units(int unit, const void* src, const Indexer& index, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_unit(unit, [&](auto tag) {
    using U = decltype(tag);
    gather_units_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const U*>(src), index,
                                                                    static_cast<U*>(out), n);
  });
}

void scatter_units(int unit, const void* src, const Indexer& index, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_unit(unit, [&](auto tag) {
    using U = decltype(tag);
    scatter_units_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const U*>(src), index,
                                                                     static_cast<U*>(out), n);
  });
}

void transpose_tiled(int elem_size, const void* in, void* out, const Indexer& in_plane, const Indexer& out_plane,
                     int64_t planes, int64_t rows, int64_t cols, int64_t istride, int64_t ostride,
                     cudaStream_t stream) {
  const int64_t tiles = planes * ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
  if (tiles == 0) return;
  const int grid = static_cast<int>(tiles < 65535 ? tiles : 65535);
  const dim3 block(kTile, kTileRows);
  auto run = [&](auto tag) {
    using U = decltype(tag);
    transpose_tiled_kernel<U><<<grid, block, 0, stream>>>(static_cast<const U*>(in), static_cast<U*>(out), in_plane,
                                                          out_plane, planes, rows, cols, istride, ostride);
  };
  if (elem_size == 1) run(uint8_t{});
  else if (elem_size == 4) run(uint32_t{});
  else if (elem_size == 8) run(uint64_t{});
}

}  // namespace keras::cuda::kernels
