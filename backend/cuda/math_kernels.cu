// CUDA kernels of the elementwise maths: unary maths (abs, sign, square, exp, log, sqrt,
// pow_scalar, clip), maximum / minimum / pow with broadcasting, the comparisons and where.
// Every formula is the CPU kernel's expression (backend/cpu/elementwise_kernels.cpp) evaluated in
// the same type, so that results and NaN handling agree: float32 uses the float functions (expf,
// powf), float64 the double ones, and the integer types go through double as std::pow and
// std::sqrt do for them on the CPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/math_kernels.h"

namespace keras::cuda::kernels {
namespace {

// The floating type the CPU's <cmath> call computes in for an operand of type T.
template <class T>
using MathT = std::conditional_t<std::is_same_v<T, float>, float, double>;

__device__ inline float m_exp(float v) { return expf(v); }
__device__ inline double m_exp(double v) { return ::exp(v); }
__device__ inline float m_log(float v) { return logf(v); }
__device__ inline double m_log(double v) { return ::log(v); }
__device__ inline float m_sqrt(float v) { return sqrtf(v); }
__device__ inline double m_sqrt(double v) { return ::sqrt(v); }
__device__ inline float m_pow(float a, float b) { return powf(a, b); }
__device__ inline double m_pow(double a, double b) { return ::pow(a, b); }

// std::pow for integer operands: the CPU computes it in double (correctly rounded, so exact
// whenever the power is representable) and truncates. CUDA's double pow may miss an exact
// integer by an ulp, which truncation would turn into an off-by-one, so non-negative exponents
// multiply exactly (exact while the result fits in 53 bits; beyond that the CPU's conversion
// overflows anyway). Negative exponents give 1/a^k: 0 after truncation unless |a| <= 1.
template <class T>
__device__ inline T int_pow(T a, T b) {
  if (b < T(0)) {
    if (a == T(1)) return T(1);
    if (a == T(-1)) return (b % 2 == 0) ? T(1) : T(-1);
    if (a == T(0)) return static_cast<T>(::pow(0.0, static_cast<double>(b)));  // inf: undefined on the CPU too
    return T(0);
  }
  double r = 1, base = static_cast<double>(a);
  for (int64_t e = b; e > 0; e >>= 1) {
    if (e & 1) r *= base;
    if (e > 1) base *= base;
  }
  return static_cast<T>(r);
}

// a ^ b as the CPU's static_cast<T>(std::pow(a, b)).
template <class T>
__device__ inline T pow_of(T a, T b) {
  if constexpr (std::is_integral_v<T>) return int_pow(a, b);
  else return m_pow(a, b);
}

// ---- unary ----

// `e` is pow_scalar's exponent as given; `s0`, `s1` are clip's bounds, or for pow_scalar the
// exponent converted to T (s0), all converted on the host as the CPU converts them.
template <class T>
__global__ void math_unary_kernel(MathUnary op, const T* x, double e, T s0, T s1, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) {
    const T v = x[i];
    T r = v;
    switch (op) {
      case MathUnary::abs: r = v < T(0) ? static_cast<T>(-v) : v; break;
      case MathUnary::sign: r = static_cast<T>((T(0) < v) - (v < T(0))); break;
      case MathUnary::square: r = v * v; break;
      case MathUnary::exp: r = static_cast<T>(m_exp(static_cast<MathT<T>>(v))); break;
      case MathUnary::log: r = static_cast<T>(m_log(static_cast<MathT<T>>(v))); break;
      case MathUnary::sqrt: r = static_cast<T>(m_sqrt(static_cast<MathT<T>>(v))); break;
      case MathUnary::pow_scalar:
        // The CPU's shortcuts, kept because they round differently from pow.
        if (e == 1) r = v;
        else if (e == 2) r = v * v;
        else if (e == 0.5) r = static_cast<T>(m_sqrt(static_cast<MathT<T>>(v)));
        else r = pow_of(v, s0);
        break;
      case MathUnary::clip: r = v < s0 ? s0 : (v > s1 ? s1 : v); break;
    }
    out[i] = r;
  }
}

// ---- binary ----

template <class T>
__device__ inline T apply_math(MathBinary op, T a, T b) {
  switch (op) {
    case MathBinary::maximum: return (a > b || a != a) ? a : b;  // a != a only for NaN
    case MathBinary::minimum: return (a < b || a != a) ? a : b;
    case MathBinary::pow: return pow_of(a, b);
  }
  return a;
}

template <class T>
__global__ void math_binary_kernel(MathBinary op, const T* a, Indexer ia, const T* b, Indexer ib, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = apply_math(op, a[offset_of(ia, i)], b[offset_of(ib, i)]);
}

template <class T>
__global__ void math_binary_flat_kernel(MathBinary op, const T* a, const T* b, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = apply_math(op, a[i], b[i]);
}

// ---- comparisons ----

template <class T>
__device__ inline bool apply_compare(Compare op, T a, T b) {
  switch (op) {
    case Compare::equal: return a == b;
    case Compare::not_equal: return a != b;
    case Compare::less: return a < b;
    case Compare::less_equal: return a <= b;
    case Compare::greater: return a > b;
    case Compare::greater_equal: return a >= b;
  }
  return false;
}

template <class T>
__global__ void compare_kernel(Compare op, const T* a, Indexer ia, const T* b, Indexer ib, bool* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = apply_compare(op, a[offset_of(ia, i)], b[offset_of(ib, i)]);
}

template <class T>
__global__ void compare_flat_kernel(Compare op, const T* a, const T* b, bool* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = apply_compare(op, a[i], b[i]);
}

// ---- where ----

template <class T>
__global__ void where_kernel(const bool* c, Indexer ic, const T* a, Indexer ia, const T* b, Indexer ib, T* out,
                             int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = c[offset_of(ic, i)] ? a[offset_of(ia, i)] : b[offset_of(ib, i)];
}

// Both indexers walk their operand contiguously (same shape as the output, no broadcast).
bool is_flat(const Indexer& ix) { return ix.rank == 1 && ix.stride[0] == 1; }

}  // namespace

void math_unary(MathUnary op, DType t, const void* x, double p0, double p1, void* out, int64_t n,
                cudaStream_t stream) {
  if (n == 0) return;
  dispatch_numeric(t, [&](auto tag) {
    using T = decltype(tag);
    math_unary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(x), p0, static_cast<T>(p0),
                                                                 static_cast<T>(p1), static_cast<T*>(out), n);
  });
}

void math_binary(MathBinary op, DType t, const void* a, const Indexer& ia, const void* b, const Indexer& ib,
                 void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool flat = is_flat(ia) && is_flat(ib);
  dispatch_numeric(t, [&](auto tag) {
    using T = decltype(tag);
    auto pa = static_cast<const T*>(a);
    auto pb = static_cast<const T*>(b);
    auto po = static_cast<T*>(out);
    if (flat) math_binary_flat_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, pa, pb, po, n);
    else math_binary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, pa, ia, pb, ib, po, n);
  });
}

void compare(Compare op, DType t, const void* a, const Indexer& ia, const void* b, const Indexer& ib, bool* out,
             int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool flat = is_flat(ia) && is_flat(ib);
  dispatch_all(t, [&](auto tag) {
    using T = decltype(tag);
    auto pa = static_cast<const T*>(a);
    auto pb = static_cast<const T*>(b);
    if (flat) compare_flat_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, pa, pb, out, n);
    else compare_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, pa, ia, pb, ib, out, n);
  });
}

void where(DType t, const bool* cond, const Indexer& ic, const void* a, const Indexer& ia, const void* b,
           const Indexer& ib, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_all(t, [&](auto tag) {
    using T = decltype(tag);
    where_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(cond, ic, static_cast<const T*>(a), ia,
                                                            static_cast<const T*>(b), ib, static_cast<T*>(out), n);
  });
}

}  // namespace keras::cuda::kernels
