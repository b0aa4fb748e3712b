// CUDA kernels of the elementwise activations and their gradients (launchers in math_kernels.h).
// The formulas are the CPU reference's (backend/cpu/activation_kernels.cpp, forward_typed and
// backward_typed) in the tensor's own type, constants included, so that float64 matches the CPU's
// plain loops and float32 its oneDNN primitives within rounding. The forward passes NaN through
// everywhere, as the CPU's does.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/math_kernels.h"

namespace keras::cuda::kernels {
namespace {

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;
constexpr double kInvSqrt2 = 0.70710678118654752440084436210485;
constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;

// Explicit float / double overloads so that float32 never silently runs the double functions.
__device__ inline float a_exp(float v) { return expf(v); }
__device__ inline double a_exp(double v) { return ::exp(v); }
__device__ inline float a_expm1(float v) { return expm1f(v); }
__device__ inline double a_expm1(double v) { return ::expm1(v); }
__device__ inline float a_log1p(float v) { return log1pf(v); }
__device__ inline double a_log1p(double v) { return ::log1p(v); }
__device__ inline float a_erf(float v) { return erff(v); }
__device__ inline double a_erf(double v) { return ::erf(v); }
__device__ inline float a_tanh(float v) { return tanhf(v); }
__device__ inline double a_tanh(double v) { return ::tanh(v); }
__device__ inline float a_abs(float v) { return fabsf(v); }
__device__ inline double a_abs(double v) { return ::fabs(v); }

// exp of a non-positive argument only, so that neither branch overflows (as the CPU's sigmoid_of).
template <class T>
__device__ inline T sigmoid_of(T v) {
  T e = a_exp(-a_abs(v));
  return v >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
}

// std::min(std::max(v, 0), 6) spelled out with std's comparisons, so that NaN passes as on the CPU.
template <class T>
__device__ inline T clamp_0_6(T v) {
  T m = v < T(0) ? T(0) : v;
  return T(6) < m ? T(6) : m;
}

template <class T>
__device__ inline T forward_of(Activation a, T v, T alpha) {
  const T sa = T(kSeluAlpha), ss = T(kSeluScale), c = T(kSqrt2OverPi), r2 = T(kInvSqrt2);
  switch (a) {
    case Activation::leaky_relu: return v > T(0) ? v : alpha * v;
    // The CPU's float32 loop: NaN kept, +0 for negatives, 6 for +inf.
    case Activation::relu6: return v > T(0) ? (v < T(6) ? v : T(6)) : (v != v ? v : T(0));
    case Activation::elu: return v > T(0) ? v : alpha * a_expm1(v);
    case Activation::selu: return ss * (v > T(0) ? v : sa * a_expm1(v));
    case Activation::gelu_erf: return T(0.5) * v * (T(1) + a_erf(v * r2));
    case Activation::gelu_tanh: return T(0.5) * v * (T(1) + a_tanh(c * (v + T(0.044715) * v * v * v)));
    case Activation::sigmoid: return sigmoid_of(v);
    case Activation::hard_sigmoid: return clamp_0_6(v + T(3)) / T(6);
    case Activation::hard_silu: return v * clamp_0_6(v + T(3)) / T(6);
    case Activation::tanh: return a_tanh(v);
    case Activation::softplus: return (v < T(0) ? T(0) : v) + a_log1p(a_exp(-a_abs(v)));
    case Activation::softsign: return v / (T(1) + a_abs(v));
    case Activation::silu: return v * sigmoid_of(v);
    case Activation::exponential: return a_exp(v);
  }
  return v;
}

// `s` is y for sigmoid, tanh and exponential, x otherwise (activation_uses_output).
template <class T>
__device__ inline T backward_of(Activation a, T g, T s, T alpha) {
  const T sa = T(kSeluAlpha), ss = T(kSeluScale), c = T(kSqrt2OverPi), r2 = T(kInvSqrt2), ip = T(kInvSqrt2Pi);
  switch (a) {
    case Activation::leaky_relu: return s > T(0) ? g : alpha * g;
    case Activation::relu6: return s > T(0) && s < T(6) ? g : T(0);
    case Activation::elu: return s > T(0) ? g : g * alpha * a_exp(s);
    case Activation::selu: return s > T(0) ? g * ss : g * ss * sa * a_exp(s);
    case Activation::gelu_erf: return g * (T(0.5) * (T(1) + a_erf(s * r2)) + s * ip * a_exp(T(-0.5) * s * s));
    case Activation::gelu_tanh: {
      T t = a_tanh(c * (s + T(0.044715) * s * s * s));
      return g * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * c * (T(1) + T(3 * 0.044715) * s * s));
    }
    case Activation::sigmoid: return g * s * (T(1) - s);
    case Activation::hard_sigmoid: return s > T(-3) && s < T(3) ? g / T(6) : T(0);
    // 0 at and below -3, 1 at and above 3, as the CPU (oneDNN's hardswish) at the kinks.
    case Activation::hard_silu: return s <= T(-3) ? T(0) : s >= T(3) ? g : g * (T(2) * s + T(3)) / T(6);
    case Activation::tanh: return g * (T(1) - s * s);
    case Activation::softplus: return g * sigmoid_of(s);
    case Activation::softsign: {
      T d = T(1) + a_abs(s);
      return g / (d * d);
    }
    case Activation::silu: {
      T p = sigmoid_of(s);
      return g * (p + s * p * (T(1) - p));
    }
    case Activation::exponential: return g * s;
  }
  return g;
}

template <class T>
__global__ void activation_forward_kernel(Activation a, const T* x, T alpha, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = forward_of(a, x[i], alpha);
}

template <class T>
__global__ void activation_backward_kernel(Activation a, const T* dy, const T* s, T alpha, T* out, int64_t n) {
  KERAS_GRID_LOOP(i, n) out[i] = backward_of(a, dy[i], s[i], alpha);
}

}  // namespace

bool activation_uses_output(Activation a) {
  return a == Activation::sigmoid || a == Activation::tanh || a == Activation::exponential;
}

void activation_forward(Activation a, DType t, const void* x, double alpha, void* out, int64_t n,
                        cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    activation_forward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(a, static_cast<const T*>(x),
                                                                         static_cast<T>(alpha), static_cast<T*>(out), n);
  });
}

void activation_backward(Activation a, DType t, const void* dy, const void* s, double alpha, void* out, int64_t n,
                         cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    activation_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        a, static_cast<const T*>(dy), static_cast<const T*>(s), static_cast<T>(alpha), static_cast<T*>(out), n);
  });
}

}  // namespace keras::cuda::kernels
