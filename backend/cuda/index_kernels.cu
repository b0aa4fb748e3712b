// The kernels of take, take_grad and one_hot, and the device-side index check behind their
// IndexErrors (launchers in shape_kernels.h).
//
// take_grad is a scatter-add where indices repeat (an Embedding's padding token, say). Float
// atomics would make it order-dependent, so the (index, position) pairs are sorted by index with
// a stable radix sort (positions stay increasing within an index), and the first thread of each
// run of equal indices sums the run's gradient rows in that order: one writer per output element
// and the CPU's summation order.
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/shape_kernels.h"

namespace keras::cuda::kernels {
namespace {

template <class I>
__global__ void find_bad_index_kernel(const I* idx, int64_t n, int64_t lo, int64_t hi, unsigned long long* first) {
  KERAS_GRID_LOOP(i, n) {
    const int64_t v = static_cast<int64_t>(idx[i]);
    if (v < lo || v >= hi) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

template <class U, class I>
__global__ void take_rows_kernel(const U* x, const I* idx, U* out, int64_t outer, int64_t extent, int64_t n,
                                 int64_t row) {
  KERAS_GRID_LOOP(t, outer * n * row) {
    const int64_t k = t % row, q = t / row, j = q % n, o = q / n;
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < 0) v += extent;
    out[t] = (v >= 0 && v < extent) ? x[(o * extent + v) * row + k] : U{};
  }
}

// keys[j] = idx[j] wrapped to [0, extent), pos[j] = j: the pairs to sort.
template <class I>
__global__ void index_pairs_kernel(const I* idx, int64_t n, int64_t extent, uint64_t* keys, int64_t* pos) {
  KERAS_GRID_LOOP(j, n) {
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < 0) v += extent;
    keys[j] = (v >= 0 && v < extent) ? static_cast<uint64_t>(v) : 0;
    pos[j] = j;
  }
}

// Thread (o, p, k) with p the first of a run of equal sorted keys writes the run's sum; the
// other threads of the run have nothing to do. Indexed rows are written once, the rest stay 0.
template <class T>
__global__ void take_grad_runs_kernel(const T* g, const uint64_t* keys, const int64_t* pos, T* out, int64_t outer,
                                      int64_t extent, int64_t n, int64_t inner) {
  KERAS_GRID_LOOP(t, outer * n * inner) {
    const int64_t k = t % inner, q = t / inner, p = q % n, o = q / n;
    const uint64_t key = keys[p];
    if (p > 0 && keys[p - 1] == key) continue;
    // The run's end by binary search (keys are sorted), so that the summing loop has a known
    // trip count and its loads can be issued ahead of the dependent adds.
    int64_t lo = p + 1, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (keys[mid] == key) lo = mid + 1;
      else hi = mid;
    }
    T acc = T(0);
#pragma unroll 4
    for (int64_t e = p; e < lo; ++e) acc += g[(o * n + pos[e]) * inner + k];
    out[(o * extent + static_cast<int64_t>(key)) * inner + k] = acc;
  }
}

template <class T, class I>
__global__ void one_hot_kernel(const I* labels, T* out, int64_t n, int64_t classes) {
  KERAS_GRID_LOOP(t, n * classes) {
    const int64_t i = t / classes, c = t % classes;
    out[t] = static_cast<int64_t>(labels[i]) == c ? T(1) : T(0);
  }
}

template <class F>
void dispatch_index(DType t, F&& f) {
  if (t == DType::int32) f(int32_t{});
  else if (t == DType::int64) f(int64_t{});
}

int end_bit_for(int64_t extent) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < extent) ++bits;
  return bits;
}

}  // namespace

void find_bad_index(DType idx_t, const void* idx, int64_t n, int64_t lo, int64_t hi, unsigned long long* first_bad,
                    cudaStream_t stream) {
  if (n == 0) return;
  dispatch_index(idx_t, [&](auto tag) {
    using I = decltype(tag);
    find_bad_index_kernel<I><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const I*>(idx), n, lo, hi, first_bad);
  });
}

void take_rows(int unit, DType idx_t, const void* x, const void* idx, void* out, int64_t outer, int64_t extent,
               int64_t n, int64_t row_units, cudaStream_t stream) {
  const int64_t total = outer * n * row_units;
  if (total == 0) return;
  dispatch_index(idx_t, [&](auto itag) {
    using I = decltype(itag);
    auto run = [&](auto utag) {
      using U = decltype(utag);
      take_rows_kernel<U, I><<<blocks_for(total), kThreads, 0, stream>>>(
          static_cast<const U*>(x), static_cast<const I*>(idx), static_cast<U*>(out), outer, extent, n, row_units);
    };
    switch (unit) {
      case 1: run(uint8_t{}); break;
      case 2: run(uint16_t{}); break;
      case 4: run(uint32_t{}); break;
      case 8: run(uint64_t{}); break;
      case 16: run(uint4{}); break;
      default: break;
    }
  });
}

cudaError_t take_grad(DType t, DType idx_t, const void* g, const void* idx, void* out, int64_t outer, int64_t extent,
                      int64_t n, int64_t inner, const Scratch& scratch, cudaStream_t stream) {
  const int64_t out_n = outer * extent * inner;
  if (out_n == 0) return cudaSuccess;
  const size_t es = dtype_size(t);
  cudaError_t status = cudaMemsetAsync(out, 0, static_cast<size_t>(out_n) * es, stream);
  if (status != cudaSuccess || n == 0 || outer * inner == 0) return status;
  auto* keys = static_cast<uint64_t*>(scratch(static_cast<size_t>(n) * sizeof(uint64_t)));
  auto* keys_sorted = static_cast<uint64_t*>(scratch(static_cast<size_t>(n) * sizeof(uint64_t)));
  auto* pos = static_cast<int64_t*>(scratch(static_cast<size_t>(n) * sizeof(int64_t)));
  auto* pos_sorted = static_cast<int64_t*>(scratch(static_cast<size_t>(n) * sizeof(int64_t)));
  dispatch_index(idx_t, [&](auto itag) {
    using I = decltype(itag);
    index_pairs_kernel<I><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const I*>(idx), n, extent, keys, pos);
  });
  const int end_bit = end_bit_for(extent);
  size_t temp_bytes = 0;
  status = cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, keys_sorted, pos, pos_sorted, n, 0, end_bit,
                                           stream);
  if (status != cudaSuccess) return status;
  void* temp = scratch(temp_bytes > 0 ? temp_bytes : 1);
  status = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_sorted, pos, pos_sorted, n, 0, end_bit, stream);
  if (status != cudaSuccess) return status;
  const int64_t threads = outer * n * inner;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    take_grad_runs_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(
        static_cast<const T*>(g), keys_sorted, pos_sorted, static_cast<T*>(out), outer, extent, n, inner);
  };
  dispatch_numeric(t, run);
  return cudaGetLastError();
}

void one_hot(DType out_t, DType idx_t, const void* labels, void* out, int64_t n, int64_t classes, cudaStream_t stream) {
  const int64_t total = n * classes;
  if (total == 0) return;
  dispatch_index(idx_t, [&](auto itag) {
    using I = decltype(itag);
    dispatch_all(out_t, [&](auto otag) {
      using T = decltype(otag);
      one_hot_kernel<T, I><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const I*>(labels),
                                                                       static_cast<T*>(out), n, classes);
    });
  });
}

}  // namespace keras::cuda::kernels
