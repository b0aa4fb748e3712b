// CPU kernels of add_relu and add_relu_grad (backend/ops_add_relu.h): one pass each, y = relu(a + b)
// and dz = relu_grad(g + h, y), for float32, float64 and bfloat16 (the sum rounded to bfloat16
// first, as add followed by relu or relu_grad gives; bf16_spans_avx512.h's loops where the CPU has
// AVX512-BF16). NaN passes the forward, as in relu.
#include "backend/bf16_compute.h"
#include "backend/cpu/bf16_bits.h"
#include "backend/cpu/bf16_spans_avx512.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/dispatch_floating.h"
#include "backend/half.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

// A select, not a branch, so that the loop vectorises into a blend.
template <class T>
[[gnu::always_inline]] inline void add_relu_body(const T* __restrict a, const T* __restrict b, T* __restrict y,
                                                 int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T s = a[i] + b[i];
    y[i] = (s > T(0)) | (s != s) ? s : T(0);
  }
}

KERAS_ISA_CLONES void add_relu_span(const float* a, const float* b, float* y, int64_t n) { add_relu_body(a, b, y, n); }
KERAS_ISA_CLONES void add_relu_span(const double* a, const double* b, double* y, int64_t n) {
  add_relu_body(a, b, y, n);
}
KERAS_ISA_CLONES void add_relu_span(const uint16_t* __restrict a, const uint16_t* __restrict b,
                                    uint16_t* __restrict y, int64_t n) {
  if (cpu::avx512::bf16_spans_available())
    return cpu::avx512::bf16_binary_span(cpu::avx512::Bf16Op::add, cpu::avx512::Bf16Keep::positive_or_nan, a, b,
                                         nullptr, y, n);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t s = float_to_bfloat16(bfloat16_to_float(a[i]) + bfloat16_to_float(b[i]));
    y[i] = s & cpu::bf16_mask(cpu::bf16_positive(s) | cpu::bf16_is_nan(s));  // relu's bits
  }
}

// This file is compiled with -fno-trapping-math (CMakeLists.txt): with trapping math GCC keeps
// the FP operation on one side of grad_body's select conditional (it must not raise exceptions
// the source would not), which AVX2 cannot mask, so the AVX2 clones were scalar loops with a
// branch per element, 7x slower than the AVX-512 clones on ResNet-20's gradients. Nothing here
// reads the FP exception flags.
//
// add_relu_grad: the sum s = g + h (rounded to the dtype first, as add gives) passed or stopped by
// y as relu_grad's kernel of the dtype does it: float32's (oneDNN's) passes s where y > 0 or y is
// NaN and gives s * 0 elsewhere (-0 for a negative s, NaN for a NaN or infinite one); float64's
// plain loop passes s where y > 0 and gives 0 elsewhere.
template <bool kOneDnn, class T>
[[gnu::always_inline]] inline void grad_body(const T* __restrict g, const T* __restrict h, const T* __restrict y,
                                             T* __restrict dz, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T s = g[i] + h[i];
    if constexpr (kOneDnn) dz[i] = y[i] <= T(0) ? s * T(0) : s;
    else dz[i] = y[i] > T(0) ? s : T(0);
  }
}

KERAS_ISA_CLONES void grad_span(const float* g, const float* h, const float* y, float* dz, int64_t n) {
  grad_body<true>(g, h, y, dz, n);
}
KERAS_ISA_CLONES void grad_span(const double* g, const double* h, const double* y, double* dz, int64_t n) {
  grad_body<false>(g, h, y, dz, n);
}
KERAS_ISA_CLONES void grad_span(const uint16_t* __restrict g, const uint16_t* __restrict h,
                                const uint16_t* __restrict y, uint16_t* __restrict dz, int64_t n) {
  if (cpu::avx512::bf16_spans_available())
    return cpu::avx512::bf16_binary_span(cpu::avx512::Bf16Op::add, cpu::avx512::Bf16Keep::where_y_positive, g, h, y,
                                         dz, n);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t s = float_to_bfloat16(bfloat16_to_float(g[i]) + bfloat16_to_float(h[i]));
    dz[i] = s & cpu::bf16_mask(cpu::bf16_positive(y[i]));  // relu_grad's mask
  }
}

// f(T{}) for the storage type T of the dtype: float, double, or uint16_t (bfloat16 bits).
template <class F>
void by_storage(DType dtype, const char* where, F&& f) {
  if (dtype == DType::bfloat16) return f(uint16_t{});
  cpu::dispatch_floating(dtype, where, f);
}

void add_relu_kernel(const TensorList& in, TensorList& out, const Attrs&) {
  by_storage(in[0].dtype(), "add_relu (cpu)", [&](auto tag) {
    using T = decltype(tag);
    auto a = static_cast<const T*>(in[0].raw_data()), b = static_cast<const T*>(in[1].raw_data());
    auto y = static_cast<T*>(out[0].raw_data());
    cpu::parallel_spans(out[0].numel(), 1 << 15, [&](int64_t s, int64_t e) { add_relu_span(a + s, b + s, y + s, e - s); });
  });
}

void add_relu_grad_kernel(const TensorList& in, TensorList& out, const Attrs&) {
  by_storage(in[0].dtype(), "add_relu_grad (cpu)", [&](auto tag) {
    using T = decltype(tag);
    auto g = static_cast<const T*>(in[0].raw_data()), h = static_cast<const T*>(in[1].raw_data()),
         y = static_cast<const T*>(in[2].raw_data());
    auto dz = static_cast<T*>(out[0].raw_data());
    cpu::parallel_spans(out[0].numel(), 1 << 15,
                        [&](int64_t s, int64_t e) { grad_span(g + s, h + s, y + s, dz + s, e - s); });
  });
}

}  // namespace

KERAS_REGISTER_KERNEL(add_relu, cpu, add_relu_kernel);
KERAS_REGISTER_BF16_KERNEL(add_relu, cpu, add_relu_kernel);
KERAS_REGISTER_KERNEL(add_relu_grad, cpu, add_relu_grad_kernel);
KERAS_REGISTER_BF16_KERNEL(add_relu_grad, cpu, add_relu_grad_kernel);

}  // namespace keras
