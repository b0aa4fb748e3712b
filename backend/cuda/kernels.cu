// The CUDA backend's elementwise, copy and reduction kernels (launchers in kernels.h). One .cu
// file on purpose: nvcc is slow, and these share the indexing and dispatch helpers.
#include <cuda_runtime.h>

#include <algorithm>
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
// Each output's sum over the reduced elements may be split into `chunks` partial sums (scratch,
// in the accumulator type), combined by a second launch in a fixed order: deterministic, and
// the whole GPU works on a few long reductions (a full sum, a bias gradient).

__device__ inline int64_t reduced_offset(const Indexer& red, int64_t r) {
  return red.rank == 1 ? r * red.stride[0] : offset_of(red, r);
}

template <class T, class A>
__device__ inline void store_sum(T* out, A* partial, int64_t slot, A s, double scale, bool final_pass) {
  if (!final_pass) partial[slot] = s;
  else out[slot] = static_cast<T>(scale == 1.0 ? s : static_cast<A>(static_cast<double>(s) * scale));
}

// Threads over outputs (coalesced when the kept axes are innermost), blockIdx.y over chunks of
// the reduced range: writes partial[chunk * n_out + o], or out[o] when there is one chunk.
template <class T>
__global__ void reduce_columns_kernel(const T* x, Indexer kept, Indexer red, T* out, Acc<T>* partial, int64_t n_out,
                                      int64_t n_red, int64_t chunk_len, double scale) {
  const int64_t r0 = blockIdx.y * chunk_len, r1 = r0 + chunk_len < n_red ? r0 + chunk_len : n_red;
  KERAS_GRID_LOOP(o, n_out) {
    const T* base = x + offset_of(kept, o);
    Acc<T> s = 0;
    for (int64_t r = r0; r < r1; ++r) s += static_cast<Acc<T>>(base[reduced_offset(red, r)]);
    store_sum(out, partial, gridDim.y == 1 ? o : blockIdx.y * n_out + o, s, scale, gridDim.y == 1);
  }
}

// Sums `chunks` partials per output (partial[c * n_out + o], c in order) into out.
template <class T>
__global__ void combine_columns_kernel(const Acc<T>* partial, T* out, int64_t n_out, int64_t chunks, double scale) {
  KERAS_GRID_LOOP(o, n_out) {
    Acc<T> s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += partial[c * n_out + o];
    store_sum(out, static_cast<Acc<T>*>(nullptr), o, s, scale, true);
  }
}

template <class A>
__device__ inline A block_sum(A v) {
  __shared__ A shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  A total = shared[0];
  __syncthreads();  // the next call reuses `shared`
  return total;
}

// Blocks over (chunk = blockIdx.x, output = blockIdx.y...): the threads of a block read
// consecutive reduced elements (coalesced when a reduced axis is innermost). Writes
// partial[o * chunks + chunk], or out[o] when there is one chunk.
template <class T>
__global__ void reduce_rows_kernel(const T* x, Indexer kept, Indexer red, T* out, Acc<T>* partial, int64_t n_out,
                                   int64_t n_red, int64_t chunk_len, double scale) {
  const int64_t chunks = gridDim.x;
  const int64_t r0 = blockIdx.x * chunk_len, r1 = r0 + chunk_len < n_red ? r0 + chunk_len : n_red;
  for (int64_t o = blockIdx.y; o < n_out; o += gridDim.y) {
    const T* base = x + offset_of(kept, o);
    Acc<T> s = 0;
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) s += static_cast<Acc<T>>(base[reduced_offset(red, r)]);
    s = block_sum(s);
    if (threadIdx.x == 0) store_sum(out, partial, chunks == 1 ? o : o * chunks + blockIdx.x, s, scale, chunks == 1);
  }
}

// One block per output over its `chunks` consecutive partials.
template <class T>
__global__ void combine_rows_kernel(const Acc<T>* partial, T* out, int64_t n_out, int64_t chunks, double scale) {
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    Acc<T> s = 0;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) s += partial[o * chunks + c];
    s = block_sum(s);
    if (threadIdx.x == 0) store_sum(out, static_cast<Acc<T>*>(nullptr), o, s, scale, true);
  }
}

// Enough blocks in flight to fill an H100 (132 SMs) several times over.
constexpr int64_t kTargetBlocks = 1024;
constexpr int64_t kMinChunk = 2048;  // reduced elements per chunk below which splitting does not pay

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool columns_plan(const Indexer& kept) { return kept.rank > 0 && kept.stride[kept.rank - 1] == 1; }
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
  else if (elem_size == 2) run(uint16_t{});
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

ReducePlan plan_reduce_sum(const Indexer& kept, int64_t n_out, int64_t n_red) {
  ReducePlan p;
  if (n_out == 0 || n_red == 0) return p;
  // Short reductions (a softmax over 3 classes) run one thread per output whatever the layout.
  p.columns = (columns_plan(kept) && n_out > 1) || n_red <= 32;
  int64_t out_blocks = p.columns ? ceil_div(n_out, kThreads) : n_out;
  int64_t want = ceil_div(kTargetBlocks, out_blocks);
  int64_t by_len = n_red / (p.columns ? 64 : kMinChunk);  // a column thread sums >= 64 elements
  p.chunks = std::max<int64_t>(1, std::min({want, by_len, int64_t{65535}}));
  if (!p.columns && out_blocks > 65535) p.chunks = 1;
  p.chunk_len = ceil_div(n_red, p.chunks);
  p.chunks = ceil_div(n_red, p.chunk_len);
  return p;
}

void reduce_sum(DType t, const void* x, const Indexer& kept, const Indexer& reduced, void* out, int64_t n_out,
                int64_t n_red, double scale, const ReducePlan& plan, void* scratch, cudaStream_t stream) {
  if (n_out == 0) return;
  dispatch_numeric(t, [&](auto tag) {
    using T = decltype(tag);
    auto px = static_cast<const T*>(x);
    auto po = static_cast<T*>(out);
    auto partial = static_cast<Acc<T>*>(scratch);
    const int64_t chunks = plan.chunks, len = n_red == 0 ? 1 : plan.chunk_len;
    if (plan.columns) {
      dim3 grid(static_cast<unsigned>(blocks_for(n_out)), static_cast<unsigned>(chunks));
      reduce_columns_kernel<T><<<grid, kThreads, 0, stream>>>(px, kept, reduced, po, partial, n_out, n_red, len, scale);
      if (chunks > 1) combine_columns_kernel<T><<<blocks_for(n_out), kThreads, 0, stream>>>(partial, po, n_out, chunks, scale);
    } else {
      dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(n_out < 65535 ? n_out : 65535));
      reduce_rows_kernel<T><<<grid, kThreads, 0, stream>>>(px, kept, reduced, po, partial, n_out, n_red, len, scale);
      if (chunks > 1)
        combine_rows_kernel<T><<<static_cast<unsigned>(n_out < 65535 ? n_out : 65535), kThreads, 0, stream>>>(
            partial, po, n_out, chunks, scale);
    }
  });
}

}  // namespace keras::cuda::kernels
