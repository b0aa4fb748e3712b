// The kernels of max, min, argmax, argmin, the max/min gradient and sum_squares_f64 (launchers
// in shape_kernels.h), all built on one reduction engine.
//
// The engine reduces n_red elements per output for n_out outputs with an Op that says how to
// load an element, combine two accumulators (associative and commutative, so any tree gives the
// CPU's answer) and store the result. It picks one of three shapes:
//  - one thread per output, looping over its elements: short reductions, or many outputs whose
//    reduced elements are strided (the kept axis is then the contiguous one, and neighbouring
//    threads read neighbouring addresses);
//  - blocks per output ("rows"): the reduced elements include the contiguous axis; a block's
//    threads read consecutive addresses and combine through shared memory;
//  - either of these split into chunks when there are too few outputs to fill the GPU: pass 1
//    writes one partial per (output, chunk) to scratch, pass 2 combines each output's partials.
// The launch shape depends only on the sizes, so results are deterministic.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/shape_kernels.h"

namespace keras::cuda::kernels {
namespace {

// Below this many elements per output, one thread per output.
constexpr int64_t kShortReduction = 64;
// Enough threads to fill an H100 (132 SMs x 2048) for the one-thread-per-output shape.
constexpr int64_t kEnoughThreads = 1 << 18;
// Target block count of the rows shape, and elements a block should at least get.
constexpr int64_t kTargetBlocks = 2048;
constexpr int64_t kPerBlock = kThreads * 16;

// offset_of with the common rank-0 and rank-1 plans (all-reduce, one axis) free of divisions.
__device__ inline int64_t offset_fast(const Indexer& ix, int64_t flat) {
  if (ix.rank == 1) return flat * ix.stride[0];
  if (ix.rank == 0) return 0;
  return offset_of(ix, flat);
}

template <class T>
__device__ inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return isnan(v);
  else return false;
}

// Slot s = c * n_out + o reduces chunk c of output o (chunks == 1: the whole reduction). With
// partial set, writes partial[s]; else stores the result of output o.
template <class Op>
__global__ void reduce_threads_kernel(Op op, Indexer kept, Indexer red, int64_t n_out, int64_t n_red, int64_t chunks,
                                      typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  const int64_t len = (n_red + chunks - 1) / chunks;
  KERAS_GRID_LOOP(s, n_out * chunks) {
    const int64_t o = s % n_out, c = s / n_out;
    const int64_t base = offset_fast(kept, o);
    const int64_t r0 = c * len, r1 = r0 + len < n_red ? r0 + len : n_red;
    Acc acc = op.init();
    for (int64_t r = r0; r < r1; ++r) acc = op.combine(acc, op.load(o, r, base + offset_fast(red, r)));
    if (partial) partial[s] = acc;
    else op.store(o, acc);
  }
}

// Item = o * parts + b: block b of `parts` blocks reduces the elements r = b * kThreads + tid
// (mod parts * kThreads) of output o. With partial set, writes partial[item].
template <class Op>
__global__ void reduce_blocks_kernel(Op op, Indexer kept, Indexer red, int64_t n_out, int64_t n_red, int64_t parts,
                                     typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  __shared__ Acc buf[kThreads];
  const int tid = static_cast<int>(threadIdx.x);
  // The loop bound is the same for every thread of the block, so the barriers are uniform.
  for (int64_t item = blockIdx.x; item < n_out * parts; item += gridDim.x) {
    const int64_t o = item / parts, b = item % parts;
    const int64_t base = offset_fast(kept, o);
    Acc acc = op.init();
#pragma unroll 4
    for (int64_t r = b * kThreads + tid; r < n_red; r += parts * kThreads)
      acc = op.combine(acc, op.load(o, r, base + offset_fast(red, r)));
    buf[tid] = acc;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
      if (tid < w) buf[tid] = op.combine(buf[tid], buf[tid + w]);
      __syncthreads();
    }
    if (tid == 0) {
      if (partial) partial[item] = buf[0];
      else op.store(o, buf[0]);
    }
    __syncthreads();
  }
}

// Pass 2: the partials of pass 1 are the elements, the combine and store are Op's.
template <class Op>
struct PartialOp {
  using Acc = typename Op::Acc;
  Op op;
  const Acc* p;
  __device__ Acc init() const { return op.init(); }
  __device__ Acc load(int64_t, int64_t, int64_t off) const { return p[off]; }
  __device__ Acc combine(Acc a, Acc b) const { return op.combine(a, b); }
  __device__ void store(int64_t o, Acc v) const { op.store(o, v); }
};

Indexer line(int64_t ext, int64_t stride) {
  Indexer ix;
  ix.rank = 1;
  ix.ext[0] = ext;
  ix.stride[0] = stride;
  return ix;
}

int grid_for(int64_t items) { return static_cast<int>(items < 65535 ? items : 65535); }

template <class Op>
void launch_threads(const Op& op, const Indexer& kept, const Indexer& red, int64_t n_out, int64_t n_red,
                    int64_t chunks, typename Op::Acc* partial, cudaStream_t stream) {
  reduce_threads_kernel<Op><<<blocks_for(n_out * chunks), kThreads, 0, stream>>>(op, kept, red, n_out, n_red, chunks,
                                                                                 partial);
}

template <class Op>
void launch_blocks(const Op& op, const Indexer& kept, const Indexer& red, int64_t n_out, int64_t n_red, int64_t parts,
                   typename Op::Acc* partial, cudaStream_t stream) {
  reduce_blocks_kernel<Op><<<grid_for(n_out * parts), kThreads, 0, stream>>>(op, kept, red, n_out, n_red, parts,
                                                                             partial);
}

// The engine: see the file comment. n_red may be 0 (every output gets op.init()).
template <class Op>
void run_reduce(const Op& op, const Indexer& kept, const Indexer& red, int64_t n_out, int64_t n_red,
                const Scratch& scratch, cudaStream_t stream) {
  using Acc = typename Op::Acc;
  if (n_out == 0) return;
  const bool rows = red.rank >= 1 && red.stride[red.rank - 1] == 1;
  if (n_red <= kShortReduction || (!rows && n_out >= kEnoughThreads)) {
    launch_threads(op, kept, red, n_out, n_red, 1, static_cast<Acc*>(nullptr), stream);
    return;
  }
  if (rows) {
    int64_t parts = (n_red + kPerBlock - 1) / kPerBlock;
    const int64_t fill = (kTargetBlocks + n_out - 1) / n_out;
    if (parts > fill) parts = fill;
    if (parts <= 1) {
      launch_blocks(op, kept, red, n_out, n_red, 1, static_cast<Acc*>(nullptr), stream);
      return;
    }
    auto* partial = static_cast<Acc*>(scratch(static_cast<size_t>(n_out * parts) * sizeof(Acc)));
    launch_blocks(op, kept, red, n_out, n_red, parts, partial, stream);
    // partial[o * parts + b]: at most kTargetBlocks values in all.
    PartialOp<Op> second{op, partial};
    if (parts <= kShortReduction) launch_threads(second, line(n_out, parts), line(parts, 1), n_out, parts, 1,
                                                 static_cast<Acc*>(nullptr), stream);
    else launch_blocks(second, line(n_out, parts), line(parts, 1), n_out, parts, 1, static_cast<Acc*>(nullptr), stream);
    return;
  }
  // Strided reduced elements, too few outputs: chunks of at least kShortReduction elements.
  int64_t chunks = (kEnoughThreads + n_out - 1) / n_out;
  const int64_t most = (n_red + kShortReduction - 1) / kShortReduction;
  if (chunks > most) chunks = most;
  if (chunks <= 1) {
    launch_threads(op, kept, red, n_out, n_red, 1, static_cast<Acc*>(nullptr), stream);
    return;
  }
  auto* partial = static_cast<Acc*>(scratch(static_cast<size_t>(n_out * chunks) * sizeof(Acc)));
  launch_threads(op, kept, red, n_out, n_red, chunks, partial, stream);
  // partial[c * n_out + o]
  PartialOp<Op> second{op, partial};
  if (chunks <= kShortReduction) launch_threads(second, line(n_out, 1), line(chunks, n_out), n_out, chunks, 1,
                                                static_cast<Acc*>(nullptr), stream);
  else launch_blocks(second, line(n_out, 1), line(chunks, n_out), n_out, chunks, 1, static_cast<Acc*>(nullptr), stream);
}

// ---- the ops ----

// NaN wins, as the CPU's combine (b > a || b != b ? b : a).
template <class T, bool IsMax>
struct ExtremeOp {
  using Acc = T;
  const T* x;
  T* out;
  T identity;
  __device__ T init() const { return identity; }
  __device__ T load(int64_t, int64_t, int64_t off) const { return x[off]; }
  __device__ T combine(T a, T b) const { return ((IsMax ? b > a : b < a) || is_nan(b)) ? b : a; }
  __device__ void store(int64_t o, T v) const { out[o] = v; }
};

// The CPU's sequential scan keeps the first NaN, else the first extreme; as a combine: NaN beats
// a number, then the better value, and on equal standing the smaller index. i < 0 is empty.
template <class T, bool IsMax>
struct ArgOp {
  struct Acc {
    T v;
    int64_t i;
  };
  const T* x;
  int64_t* out;
  __device__ Acc init() const { return Acc{T(0), -1}; }
  __device__ Acc load(int64_t, int64_t r, int64_t off) const { return Acc{x[off], r}; }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    bool take_b;
    if (an || bn) take_b = an && bn ? b.i < a.i : bn;
    else if (b.v == a.v) take_b = b.i < a.i;
    else take_b = IsMax ? b.v > a.v : b.v < a.v;
    return take_b ? b : a;
  }
  __device__ void store(int64_t o, Acc v) const { out[o] = v.i; }
};

// ties[o] = number of elements equal to the extreme y[o] (0 when y[o] is NaN).
template <class T>
struct TiesOp {
  using Acc = int64_t;
  const T* x;
  const T* y;
  int64_t* out;
  __device__ int64_t init() const { return 0; }
  __device__ int64_t load(int64_t o, int64_t, int64_t off) const { return x[off] == y[o] ? 1 : 0; }
  __device__ int64_t combine(int64_t a, int64_t b) const { return a + b; }
  __device__ void store(int64_t o, int64_t v) const { out[o] = v; }
};

template <class T>
struct SumSquaresOp {
  using Acc = double;
  const T* x;
  double* out;
  __device__ double init() const { return 0.0; }
  __device__ double load(int64_t, int64_t, int64_t off) const {
    const double v = static_cast<double>(x[off]);
    return v * v;
  }
  __device__ double combine(double a, double b) const { return a + b; }
  __device__ void store(int64_t o, double v) const { out[o] = v; }
};

template <class T>
__global__ void extreme_grad_kernel(const T* x, const T* y, const T* dy, const int64_t* ties, Indexer out_of, T* dx,
                                    int64_t n) {
  KERAS_GRID_LOOP(i, n) {
    const int64_t o = offset_fast(out_of, i);
    dx[i] = x[i] == y[o] ? dy[o] / static_cast<T>(ties[o]) : T(0);
  }
}

template <class T, bool IsMax>
T extreme_identity() {
  if constexpr (std::is_same_v<T, bool>) return !IsMax;
  else if constexpr (std::numeric_limits<T>::has_infinity)
    return IsMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else return IsMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

}  // namespace

void reduce_extreme(bool is_max, DType t, const void* x, const Indexer& kept, const Indexer& reduced, void* out,
                    int64_t n_out, int64_t n_red, const Scratch& scratch, cudaStream_t stream) {
  dispatch_all(t, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    T* po = static_cast<T*>(out);
    if (is_max) run_reduce(ExtremeOp<T, true>{px, po, extreme_identity<T, true>()}, kept, reduced, n_out, n_red, scratch, stream);
    else run_reduce(ExtremeOp<T, false>{px, po, extreme_identity<T, false>()}, kept, reduced, n_out, n_red, scratch, stream);
  });
}

void arg_extreme(bool is_max, DType t, const void* x, const Indexer& kept, const Indexer& reduced, int64_t* out,
                 int64_t n_out, int64_t n_red, const Scratch& scratch, cudaStream_t stream) {
  dispatch_numeric(t, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    if (is_max) run_reduce(ArgOp<T, true>{px, out}, kept, reduced, n_out, n_red, scratch, stream);
    else run_reduce(ArgOp<T, false>{px, out}, kept, reduced, n_out, n_red, scratch, stream);
  });
}

void extreme_grad(DType t, const void* x, const void* y, const void* dy, void* dx, const Indexer& kept,
                  const Indexer& reduced, const Indexer& out_of, int64_t n_out, int64_t n_red, int64_t n,
                  const Scratch& scratch, cudaStream_t stream) {
  if (n == 0 || n_out == 0) return;
  auto* ties = static_cast<int64_t*>(scratch(static_cast<size_t>(n_out) * sizeof(int64_t)));
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    const T* py = static_cast<const T*>(y);
    run_reduce(TiesOp<T>{px, py, ties}, kept, reduced, n_out, n_red, scratch, stream);
    extreme_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(px, py, static_cast<const T*>(dy), ties, out_of,
                                                                   static_cast<T*>(dx), n);
  });
}

void sum_squares(DType t, const void* x, int64_t n, double* out, const Scratch& scratch, cudaStream_t stream) {
  Indexer all = n > 1 ? line(n, 1) : Indexer{};
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    run_reduce(SumSquaresOp<T>{static_cast<const T*>(x), out}, Indexer{}, all, 1, n, scratch, stream);
  });
}

}  // namespace keras::cuda::kernels
