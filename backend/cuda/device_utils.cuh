// Device-side helpers shared by the backend's .cu files: the launch geometry of grid-stride
// loops, Indexer offsets, and the dtype dispatch of launchers. Include only from .cu files.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels.h"

namespace keras::cuda::kernels {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (at least 1; at most 65535, the loop covers the rest).
inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

// Element offset of row-major flat index `flat` over ix.ext through ix.stride.
__device__ inline int64_t offset_of(const Indexer& ix, int64_t flat) {
  int64_t off = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    int64_t e = ix.ext[d];
    off += (flat % e) * ix.stride[d];
    flat /= e;
  }
  return off;
}

#define KERAS_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

// Calls f(T{}) for the C++ type of t; dtypes outside the list do nothing (callers reject them).
template <class F>
void dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::float32: f(float{}); return;
    case DType::float64: f(double{}); return;
    case DType::int32: f(int32_t{}); return;
    case DType::int64: f(int64_t{}); return;
    case DType::boolean: f(bool{}); return;
  }
}

template <class F>
void dispatch_numeric(DType t, F&& f) {
  switch (t) {
    case DType::float32: f(float{}); return;
    case DType::float64: f(double{}); return;
    case DType::int32: f(int32_t{}); return;
    case DType::int64: f(int64_t{}); return;
    default: return;
  }
}

template <class F>
void dispatch_float(DType t, F&& f) {
  if (t == DType::float32) f(float{});
  else if (t == DType::float64) f(double{});
}

// Accumulator type of sums: double for floating types, int64 for integers.
template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

}  // namespace keras::cuda::kernels
