// CUDA kernels of sparse_softmax_cross_entropy and its gradient (contract and CPU kernels:
// losses/sparse_softmax_cross_entropy.cpp). The forward gives each row to one block: a max
// reduction, exp(x - max) written to the softmax output while its sum is reduced in double (as
// the CPU accumulates), then the normalisation and the loss m + log(s) - x[label] in double.
// The block reductions are fixed trees, so results are deterministic.
#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/exact_math.cuh"
#include "backend/cuda/train_kernels.h"

namespace keras::cuda::kernels {
namespace {

constexpr int kRowThreads = 256;  // a power of two: the reduction trees halve it

__global__ void init_position(int64_t* position, int64_t n) { *position = n; }

template <class L>
__global__ void bad_label_kernel(const L* labels, int64_t n, int64_t classes, int64_t* position) {
  KERAS_GRID_LOOP(i, n) {
    const int64_t l = static_cast<int64_t>(labels[i]);
    // Integer atomics: the minimum is the same whatever the order, so the answer is deterministic.
    if (l < 0 || l >= classes)
      atomicMin(reinterpret_cast<unsigned long long*>(position), static_cast<unsigned long long>(i));
  }
}

template <class T, class L>
__global__ void forward_kernel(const T* x, const L* labels, T* loss, T* probs, int64_t n, int64_t c) {
  __shared__ T smax[kRowThreads];
  __shared__ double ssum[kRowThreads];
  const int tid = threadIdx.x;
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    const T* row = x + r * c;
    T* p = probs + r * c;
    // Max: with a NaN anywhere the whole row ends NaN whatever the order, as on the CPU.
    T m = row[0];
    for (int64_t j = tid; j < c; j += kRowThreads) m = row[j] > m ? row[j] : m;
    smax[tid] = m;
    __syncthreads();
    for (int s = kRowThreads / 2; s > 0; s >>= 1) {
      if (tid < s) smax[tid] = smax[tid + s] > smax[tid] ? smax[tid + s] : smax[tid];
      __syncthreads();
    }
    m = smax[0];
    double sum = 0;
    for (int64_t j = tid; j < c; j += kRowThreads) {
      const T e = exp(xsub(row[j], m));
      p[j] = e;
      sum += static_cast<double>(e);
    }
    ssum[tid] = sum;
    __syncthreads();
    for (int s = kRowThreads / 2; s > 0; s >>= 1) {
      if (tid < s) ssum[tid] = ssum[tid] + ssum[tid + s];
      __syncthreads();
    }
    const double total = ssum[0];
    const T inv = static_cast<T>(1.0 / total);
    for (int64_t j = tid; j < c; j += kRowThreads) p[j] = xmul(p[j], inv);
    if (tid == 0)
      loss[r] = static_cast<T>(xsub(xadd(static_cast<double>(m), log(total)), static_cast<double>(row[labels[r]])));
    // smax[0] / ssum[0] are read above: the next row must not overwrite them before all have.
    __syncthreads();
  }
}

template <class T, class L>
__global__ void grad_kernel(const T* probs, const L* labels, const T* g, T* dx, int64_t n, int64_t c) {
  KERAS_GRID_LOOP(i, n * c) {
    const int64_t r = i / c, j = i % c;
    const T gi = g[r];
    const T d = xmul(probs[i], gi);
    dx[i] = j == static_cast<int64_t>(labels[r]) ? xsub(d, gi) : d;
  }
}

template <class F>
void dispatch_label(DType l, F&& f) {
  if (l == DType::int32) f(int32_t{});
  else if (l == DType::int64) f(int64_t{});
}

}  // namespace

void find_bad_label(DType label_t, const void* labels, int64_t n, int64_t classes, int64_t* position,
                    cudaStream_t stream) {
  init_position<<<1, 1, 0, stream>>>(position, n);
  if (n == 0) return;
  dispatch_label(label_t, [&](auto ltag) {
    using L = decltype(ltag);
    bad_label_kernel<L><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const L*>(labels), n, classes, position);
  });
}

void sparse_ce_forward(DType t, DType label_t, const void* logits, const void* labels, void* loss, void* probs,
                       int64_t n, int64_t c, cudaStream_t stream) {
  if (n == 0 || c == 0) return;
  const int grid = static_cast<int>(n < 65535 ? n : 65535);
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    dispatch_label(label_t, [&](auto ltag) {
      using L = decltype(ltag);
      forward_kernel<T, L><<<grid, kRowThreads, 0, stream>>>(static_cast<const T*>(logits),
                                                             static_cast<const L*>(labels), static_cast<T*>(loss),
                                                             static_cast<T*>(probs), n, c);
    });
  });
}

void sparse_ce_grad(DType t, DType label_t, const void* probs, const void* labels, const void* g, void* dx, int64_t n,
                    int64_t c, cudaStream_t stream) {
  if (n == 0 || c == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    dispatch_label(label_t, [&](auto ltag) {
      using L = decltype(ltag);
      grad_kernel<T, L><<<blocks_for(n * c), kThreads, 0, stream>>>(static_cast<const T*>(probs),
                                                                    static_cast<const L*>(labels),
                                                                    static_cast<const T*>(g), static_cast<T*>(dx), n, c);
    });
  });
}

}  // namespace keras::cuda::kernels
