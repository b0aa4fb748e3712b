// CUDA kernels of dropout and dropout_grad (contract: backend/ops_dropout.cpp). The keep mask is
// a pure function of (seed, counter, element index) through the Philox-4x32-10 block of
// backend/random.cpp, so the GPU draws the CPU's mask bit for bit: one thread per 128-bit block,
// covering elements 4b .. 4b+3.
#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/exact_math.cuh"
#include "backend/cuda/train_kernels.h"

namespace keras::cuda::kernels {
namespace {

// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): ten rounds of
// two 32x32->64 multiplies with the key bumped by the Weyl constants after each round. The
// 128-bit counter is (counter low, counter high, 0, 0) and the key (seed low, seed high), as on
// the CPU.
__device__ inline void philox(uint64_t seed, uint64_t counter, uint32_t out[4]) {
  uint32_t x0 = static_cast<uint32_t>(counter), x1 = static_cast<uint32_t>(counter >> 32), x2 = 0, x3 = 0;
  uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const uint32_t lo_a = 0xD2511F53u * x0, hi_a = __umulhi(0xD2511F53u, x0);
    const uint32_t lo_b = 0xCD9E8D57u * x2, hi_b = __umulhi(0xCD9E8D57u, x2);
    const uint32_t y0 = hi_b ^ x1 ^ key0;
    const uint32_t y2 = hi_a ^ x3 ^ key1;
    x0 = y0;
    x1 = lo_b;
    x2 = y2;
    x3 = lo_a;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  out[0] = x0, out[1] = x1, out[2] = x2, out[3] = x3;
}

template <class T>
__global__ void dropout_kernel(const T* x, T* y, bool* mask, int64_t n, uint64_t seed, uint64_t counter,
                               uint64_t threshold, T scale) {
  const int64_t blocks = (n + 3) / 4;
  KERAS_GRID_LOOP(b, blocks) {
    uint32_t w[4];
    philox(seed, counter + static_cast<uint64_t>(b), w);
    for (int64_t j = 0, i = 4 * b; j < 4 && i < n; ++j, ++i) {
      const bool keep = w[j] >= threshold;
      mask[i] = keep;
      y[i] = keep ? xmul(x[i], scale) : T(0);
    }
  }
}

template <class T>
__global__ void dropout_grad_kernel(const T* g, const bool* mask, T* d, int64_t n, T scale) {
  KERAS_GRID_LOOP(i, n) { d[i] = mask[i] ? xmul(g[i], scale) : T(0); }
}

}  // namespace

void dropout(DType t, const void* x, void* y, bool* mask, int64_t n, uint64_t seed, uint64_t counter,
             uint64_t threshold, double rate, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    dropout_kernel<T><<<blocks_for((n + 3) / 4), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), mask, n, seed, counter, threshold,
        static_cast<T>(1.0 / (1.0 - rate)));
  });
}

void dropout_grad(DType t, const void* g, const bool* mask, void* d, int64_t n, double rate, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    dropout_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(g), mask,
                                                                   static_cast<T*>(d), n,
                                                                   static_cast<T>(1.0 / (1.0 - rate)));
  });
}

}  // namespace keras::cuda::kernels
