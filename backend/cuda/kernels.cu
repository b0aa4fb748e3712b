// The CUDA backend's elementwise, copy and reduction kernels (launchers in kernels.h). One .cu
// file on purpose: nvcc is slow, and these share the indexing and dispatch helpers.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/kernels.h"

namespace keras::cuda::kernels {
namespace {

// ---- fill, gather, astype ----

template <class T>
__global__ void fill_kernel(T* out, int64_t n, T value) {
  KERAS_GRID_LOOP(i, n) out[i] = value;
}

template <class T>
__global__ void gather_kernel(const T* src, Indexer ix, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = src[offset_of(ix, i)];
}

template <class S, class D>
__global__ void astype_kernel(const S* src, D* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = static_cast<D>(src[i]);
}

// ---- elementwise ----

template <class T>
__device__ inline T apply_binary(Binary op, T a, T b) {
  switch (op) {
    case Binary::add: return a + b;
    case Binary::subtract: return a - b;
    case Binary::multiply: return a * b;
    case Binary::divide: return a / b;
  }
  return a;
}

template <class T>
__global__ void binary_kernel(Binary op, const T* a, Indexer ia, const T* b, Indexer ib, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = apply_binary(op, a[offset_of(ia, i)], b[offset_of(ib, i)]);
}

// The contiguous same-shape case, without index arithmetic.
template <class T>
__global__ void binary_flat_kernel(Binary op, const T* a, const T* b, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = apply_binary(op, a[i], b[i]);
}

template <class T>
__global__ void unary_kernel(Unary op, const T* x, T s, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) {
    T v = x[i];
    T r = v;
    switch (op) {
      case Unary::add_scalar: r = v + s; break;
      case Unary::multiply_scalar: r = v * s; break;
      case Unary::divide_scalar: r = v / s; break;
      case Unary::rsubtract_scalar: r = s - v; break;
      case Unary::rdivide_scalar: r = s / v; break;
      case Unary::negative: r = -v; break;
      case Unary::relu: r = v > T(0) ? v : T(0); break;
    }
    out[i] = r;
  }
}

template <class T>
__device__ inline T activate(Act act, T z) {
  switch (act) {
    case Act::linear: return z;
    case Act::relu: return z > T(0) ? z : T(0);
    case Act::sigmoid: return T(1) / (T(1) + exp(-z));
    case Act::tanh: return tanh(z);
    case Act::elu: return z > T(0) ? z : expm1(z);
    case Act::gelu: return T(0.5) * z * (T(1) + erf(z * T(0.70710678118654752440)));
    case Act::swish: return z / (T(1) + exp(-z));
  }
  return z;
}

template <class T>
__global__ void bias_activation_kernel(Act act, T* y, const T* bias, int64_t rows, int64_t cols) {
  KERAS_GRID_LOOP(i, rows * cols) {
    T z = y[i];
    if (bias) z += bias[i % cols];
    y[i] = activate(act, z);
  }
}

// Derivatives in terms of the output y, as the CPU's dense_activation_grad (relu'(0) = 0).
template <class T>
__global__ void activation_grad_kernel(Act act, const T* dy, const T* y, T* dx, int64_t n) {
  KERAS_GRID_LOOP(i, n) {
    T d = dy[i], v = y[i], r = d;
    switch (act) {
      case Act::relu: r = v > T(0) ? d : T(0); break;
      case Act::sigmoid: r = d * v * (T(1) - v); break;
      case Act::tanh: r = d * (T(1) - v * v); break;
      case Act::elu: r = v > T(0) ? d : d * (v + T(1)); break;
      default: break;
    }
    dx[i] = r;
  }
}

// ---- reductions ----


// One thread per output: for short reductions (few reduced elements, many outputs).
template <class T>
__global__ void reduce_thread_kernel(const T* x, Indexer kept, Indexer red, T* out, int64_t n_out, int64_t n_red,
                                     double scale) {
  KERAS_GRID_LOOP(o, n_out) {
    const T* base = x + offset_of(kept, o);
    Acc<T> s = 0;
    for (int64_t r = 0; r < n_red; ++r) s += static_cast<Acc<T>>(base[offset_of(red, r)]);
    out[o] = static_cast<T>(scale == 1.0 ? s : static_cast<Acc<T>>(static_cast<double>(s) * scale));
  }
}

// One block per output, a tree sum over the block: for long reductions (bias gradients, totals).
template <class T>
__global__ void reduce_block_kernel(const T* x, Indexer kept, Indexer red, T* out, int64_t n_out, int64_t n_red,
                                    double scale) {
  __shared__ Acc<T> partial[kThreads];
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    const T* base = x + offset_of(kept, o);
    Acc<T> s = 0;
    for (int64_t r = threadIdx.x; r < n_red; r += blockDim.x) s += static_cast<Acc<T>>(base[offset_of(red, r)]);
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int width = kThreads / 2; width > 0; width /= 2) {
      if (static_cast<int>(threadIdx.x) < width) partial[threadIdx.x] += partial[threadIdx.x + width];
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      Acc<T> total = partial[0];
      out[o] = static_cast<T>(scale == 1.0 ? total : static_cast<Acc<T>>(static_cast<double>(total) * scale));
    }
    __syncthreads();
  }
}

}  // namespace

void fill(DType t, void* out, int64_t n, double value, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_all(t, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, static_cast<T>(value));
  });
}

void gather(int elem_size, const void* src, const Indexer& index, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), index, static_cast<T*>(out), n);
  };
  if (elem_size == 1) run(uint8_t{});
  else if (elem_size == 4) run(uint32_t{});
  else if (elem_size == 8) run(uint64_t{});
}

void astype(DType from, DType to, const void* src, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_all(from, [&](auto s_tag) {
    using S = decltype(s_tag);
    dispatch_all(to, [&](auto d_tag) {
      using D = decltype(d_tag);
      astype_kernel<S, D><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(out), n);
    });
  });
}

void binary(Binary op, DType t, const void* a, const Indexer& ia, const void* b, const Indexer& ib, void* out,
            int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  bool flat = ia.rank == 1 && ib.rank == 1 && ia.stride[0] == 1 && ib.stride[0] == 1;
  dispatch_numeric(t, [&](auto tag) {
    using T = decltype(tag);
    if (flat)
      binary_flat_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(a), static_cast<const T*>(b),
                                                                    static_cast<T*>(out), n);
    else
      binary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(a), ia, static_cast<const T*>(b),
                                                               ib, static_cast<T*>(out), n);
  });
}

void unary(Unary op, DType t, const void* x, double s, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_numeric(t, [&](auto tag) {
    using T = decltype(tag);
    unary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(x), static_cast<T>(s),
                                                            static_cast<T*>(out), n);
  });
}

void activation_grad(Act act, DType t, const void* dy, const void* y, void* dx, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    activation_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(act, static_cast<const T*>(dy),
                                                                      static_cast<const T*>(y), static_cast<T*>(dx), n);
  });
}

void bias_activation(Act act, DType t, void* y, const void* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    bias_activation_kernel<T><<<blocks_for(rows * cols), kThreads, 0, stream>>>(act, static_cast<T*>(y),
                                                                                static_cast<const T*>(bias), rows, cols);
  });
}

void reduce_sum(DType t, const void* x, const Indexer& kept, const Indexer& reduced, void* out, int64_t n_out,
                int64_t n_red, double scale, cudaStream_t stream) {
  if (n_out == 0) return;
  dispatch_numeric(t, [&](auto tag) {
    using T = decltype(tag);
    auto px = static_cast<const T*>(x);
    auto po = static_cast<T*>(out);
    if (n_red <= 32 || n_out >= 65536)
      reduce_thread_kernel<T><<<blocks_for(n_out), kThreads, 0, stream>>>(px, kept, reduced, po, n_out, n_red, scale);
    else
      reduce_block_kernel<T><<<static_cast<int>(n_out < 65535 ? n_out : 65535), kThreads, 0, stream>>>(
          px, kept, reduced, po, n_out, n_red, scale);
  });
}

}  // namespace keras::cuda::kernels
