// CUDA kernels of softmax, log_softmax, masked_softmax and their backward passes (contract:
// backend/cuda/softmax_kernels.h). One kernel template per direction, parameterised by the lanes
// that share a row (32: a warp on a contiguous row; 1: a thread on a strided column).
#include <cmath>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/softmax_kernels.h"

namespace keras::cuda::kernels {
namespace {

constexpr double kFill = 1e9;  // as backend/cpu/attention_kernels.cpp

enum class Kind : int { softmax, log_softmax, masked };

__device__ inline float exp_of(float v) { return expf(v); }
__device__ inline double exp_of(double v) { return exp(v); }

template <int Lanes>
__device__ inline double lanes_sum(double v) {
  if constexpr (Lanes == 32)
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int Lanes, class T>
__device__ inline T lanes_max(T v) {
  if constexpr (Lanes == 32)
    for (int o = 16; o > 0; o /= 2) {
      const T w = __shfl_xor_sync(0xffffffffu, v, o);
      v = w > v ? w : v;
    }
  return v;
}

// The rows this thread (group of Lanes threads) visits, and element k of a row.
template <int Lanes>
struct RowWalk {
  int64_t first, step;
  int lane;
  __device__ RowWalk() {
    const int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
    first = t / Lanes;
    step = (int64_t{blockDim.x} * gridDim.x) / Lanes;
    lane = Lanes == 1 ? 0 : static_cast<int>(threadIdx.x % Lanes);
  }
};

// The score the softmax sees: x, or the masked fill in the dtype (as the CPU's `filled`).
template <class T>
__device__ inline T score(const T* x, const bool* mask, int64_t i, bool subtract) {
  const T v = x[i];
  if (mask == nullptr || mask[i]) return v;
  return subtract ? static_cast<T>(v - static_cast<T>(kFill)) : static_cast<T>(-kFill);
}

// Max and sum of exp(score - max) of the row at `base` (stride `inner`), equal in every lane.
template <int Lanes, class T>
__device__ inline void row_stats(const T* x, const bool* mask, int64_t base, int64_t len, int64_t inner, int lane,
                                 bool subtract, T& m, double& s) {
  m = -INFINITY;
  for (int64_t k = lane; k < len; k += Lanes) {
    const T v = score(x, mask, base + k * inner, subtract);
    m = v > m ? v : m;
  }
  m = lanes_max<Lanes>(m);
  s = 0;
  for (int64_t k = lane; k < len; k += Lanes)
    s += static_cast<double>(exp_of(static_cast<T>(score(x, mask, base + k * inner, subtract) - m)));
  s = lanes_sum<Lanes>(s);
}

template <class T, int Lanes>
__global__ void forward_kernel(Kind kind, const T* x, const bool* mask, T* y, int64_t rows, int64_t len, int64_t inner,
                               bool subtract, bool zero_masked) {
  const RowWalk<Lanes> w;
  for (int64_t r = w.first; r < rows; r += w.step) {  // uniform across a warp's lanes
    const int64_t base = (r / inner) * len * inner + r % inner;
    T m;
    double s;
    row_stats<Lanes>(x, mask, base, len, inner, w.lane, subtract, m, s);
    const double log_s = kind == Kind::log_softmax ? log(s) : 0.0;
    for (int64_t k = w.lane; k < len; k += Lanes) {
      const int64_t i = base + k * inner;
      const T d = static_cast<T>(score(x, mask, i, subtract) - m);
      if (kind == Kind::log_softmax) y[i] = static_cast<T>(static_cast<double>(d) - log_s);
      else if (zero_masked && !mask[i]) y[i] = T(0);
      else y[i] = static_cast<T>(static_cast<double>(exp_of(d)) / s);
    }
  }
}

// softmax and log_softmax read (grad, y); masked reads (grad, x, mask) and recomputes p.
template <class T, int Lanes>
__global__ void backward_kernel(Kind kind, const T* g, const T* saved, const bool* mask, T* dx, int64_t rows,
                                int64_t len, int64_t inner, bool subtract, bool zero_masked) {
  const RowWalk<Lanes> w;
  for (int64_t r = w.first; r < rows; r += w.step) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    if (kind == Kind::masked) {
      T m;
      double s;
      row_stats<Lanes>(saved, mask, base, len, inner, w.lane, subtract, m, s);
      auto p = [&](int64_t i) {
        return static_cast<double>(exp_of(static_cast<T>(score(saved, mask, i, subtract) - m))) / s;
      };
      auto gk = [&](int64_t i) { return (zero_masked && !mask[i]) ? 0.0 : static_cast<double>(g[i]); };
      double dot = 0;
      for (int64_t k = w.lane; k < len; k += Lanes) dot += gk(base + k * inner) * p(base + k * inner);
      dot = lanes_sum<Lanes>(dot);
      for (int64_t k = w.lane; k < len; k += Lanes) {
        const int64_t i = base + k * inner;
        dx[i] = (subtract || mask[i]) ? static_cast<T>(p(i) * (gk(i) - dot)) : T(0);
      }
      continue;
    }
    const bool log_kind = kind == Kind::log_softmax;
    double dot = 0;
    for (int64_t k = w.lane; k < len; k += Lanes) {
      const int64_t i = base + k * inner;
      dot += log_kind ? static_cast<double>(g[i]) : static_cast<double>(g[i]) * static_cast<double>(saved[i]);
    }
    dot = lanes_sum<Lanes>(dot);
    for (int64_t k = w.lane; k < len; k += Lanes) {
      const int64_t i = base + k * inner;
      const double gi = g[i], yi = saved[i];
      dx[i] = static_cast<T>(log_kind ? gi - static_cast<double>(exp_of(saved[i])) * dot : yi * (gi - dot));
    }
  }
}

// Blocks for `rows` rows of `lanes` threads each (grid-stride loops cover the rest).
int blocks_for_rows(int64_t rows, int lanes) { return blocks_for(rows * lanes); }

template <class T>
void launch_forward(Kind kind, const T* x, const bool* mask, T* y, int64_t rows, int64_t len, int64_t inner,
                    bool subtract, bool zero_masked, cudaStream_t stream) {
  if (rows == 0 || len == 0) return;
  if (inner == 1)
    forward_kernel<T, 32><<<blocks_for_rows(rows, 32), kThreads, 0, stream>>>(kind, x, mask, y, rows, len, inner,
                                                                              subtract, zero_masked);
  else
    forward_kernel<T, 1><<<blocks_for_rows(rows, 1), kThreads, 0, stream>>>(kind, x, mask, y, rows, len, inner,
                                                                            subtract, zero_masked);
}

template <class T>
void launch_backward(Kind kind, const T* g, const T* saved, const bool* mask, T* dx, int64_t rows, int64_t len,
                     int64_t inner, bool subtract, bool zero_masked, cudaStream_t stream) {
  if (rows == 0 || len == 0) return;
  if (inner == 1)
    backward_kernel<T, 32><<<blocks_for_rows(rows, 32), kThreads, 0, stream>>>(kind, g, saved, mask, dx, rows, len,
                                                                               inner, subtract, zero_masked);
  else
    backward_kernel<T, 1><<<blocks_for_rows(rows, 1), kThreads, 0, stream>>>(kind, g, saved, mask, dx, rows, len,
                                                                             inner, subtract, zero_masked);
}

}  // namespace

void softmax_forward(DType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, bool log,
                     cudaStream_t stream) {
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    launch_forward(log ? Kind::log_softmax : Kind::softmax, static_cast<const T*>(x), nullptr, static_cast<T*>(y),
                   outer * inner, len, inner, false, false, stream);
  });
}

void softmax_backward(DType t, const void* grad, const void* y, void* dx, int64_t outer, int64_t len, int64_t inner,
                      bool log, cudaStream_t stream) {
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    launch_backward(log ? Kind::log_softmax : Kind::softmax, static_cast<const T*>(grad), static_cast<const T*>(y),
                    nullptr, static_cast<T*>(dx), outer * inner, len, inner, false, false, stream);
  });
}

void masked_softmax_forward(DType t, const void* x, const bool* mask, void* y, int64_t rows, int64_t len,
                            bool subtract, bool zero_masked, cudaStream_t stream) {
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    launch_forward(Kind::masked, static_cast<const T*>(x), mask, static_cast<T*>(y), rows, len, 1, subtract,
                   zero_masked, stream);
  });
}

void masked_softmax_backward(DType t, const void* grad, const void* x, const bool* mask, void* dx, int64_t rows,
                             int64_t len, bool subtract, bool zero_masked, cudaStream_t stream) {
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    launch_backward(Kind::masked, static_cast<const T*>(grad), static_cast<const T*>(x), mask, static_cast<T*>(dx),
                    rows, len, 1, subtract, zero_masked, stream);
  });
}

}  // namespace keras::cuda::kernels
