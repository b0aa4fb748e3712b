// float32 max-pooling kernels written with 16-byte vector extensions (4 channels per operation,
// SSE2 on any x86-64), used by the max_pool2d dispatchers of pool_kernels.cpp; the forward takes
// 16 channels at a time in AVX-512 where it is allowed (with 4, bfloat16 (128, 24, 24, 64) pool
// 2/2 took as long as the convolution before it).
// The same loops take bfloat16 tensors (T = uint16_t): values widen exactly to float32 for the
// comparisons and narrow back exactly (a maximum is one of the inputs), so no rounding happens.
//
// Why not oneDNN: measured on a 2-core AMD EPYC (AVX2) with oneDNN 2.6 at (128, 24, 24, 64)
// pool 2/2, one thread, process CPU time: oneDNN's NHWC forward_training (jit:avx2, u8
// workspace) took 13.6 ms, of which the u8 -> int32 copy of its workspace was a few percent, and
// its forward_inference 4.4 ms; this forward writing values and int32 indices takes 3.1-4.1 ms,
// the select-write backward 1.5 ms against 4.4 ms for the memset plus scatter loop. (Keeping
// oneDNN's u8 workspace would also tie the indices to oneDNN's backward and its format.)
// A window always holds at least one valid position: pool2d_geometry pads less than a window.
//
// The forward (each of its channel loops) and the backward keep the reference's convention
// exactly (pool_reference.h): the first valid window position starts as the maximum, a later one
// replaces it only when strictly greater (so ties keep the earlier position) or when it is NaN (so
// a NaN in a window is its maximum, as in TensorFlow: NaNs are not hidden), indices number
// positions kh * pool_w + kw.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cpu/bf16_convert.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/pool_reference.h"
#include "backend/errors.h"

namespace keras::cpu {
namespace {

using F4 = float __attribute__((vector_size(16)));
using I4 = int32_t __attribute__((vector_size(16)));
constexpr int64_t kLanes = 4;
constexpr int64_t kParallelMin = 1 << 14;

F4 load(const float* p) {
  F4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
using U4 = uint16_t __attribute__((vector_size(8)));
using UI4 = uint32_t __attribute__((vector_size(16)));
F4 load(const uint16_t* p) {  // four bfloat16 values, widened
  U4 h;
  std::memcpy(&h, p, sizeof h);
  const UI4 bits = __builtin_convertvector(h, UI4) << 16;
  F4 v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
void store(uint16_t* p, const F4& v) {  // exact: every value came from load(const uint16_t*)
  UI4 bits;
  std::memcpy(&bits, &v, sizeof v);
  const U4 h = __builtin_convertvector(bits >> 16, U4);
  std::memcpy(p, &h, sizeof h);
}

I4 load(const int32_t* p) {
  I4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T>
void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// The valid window positions of output (oh, ow): [k0, k1) along one axis, clipped to the input.
struct Span {
  int64_t start, k0, k1;  // start: first input index of the window (may be negative)
};
Span span(int64_t o, int64_t stride, int64_t pad, int64_t pool, int64_t extent) {
  const int64_t start = o * stride - pad;
  return {start, std::max<int64_t>(0, -start), std::min(pool, extent - start)};
}

// 16 channels of float32 or bfloat16 (widened exactly) in a zmm register, and back (maskz forms:
// GCC 12 warns on the unmasked ones).
__attribute__((target("avx512f"))) inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
__attribute__((target("avx512f"))) inline __m512 load16(const uint16_t* p) {
  const __m512i wide = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, wide, 16));
}
__attribute__((target("avx512f"))) inline void store16(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
__attribute__((target("avx512f"))) inline void store16(uint16_t* p, __m512 v) {
  const __m256i bits = _mm512_maskz_cvtepi32_epi16(0xFFFF, _mm512_maskz_srli_epi32(0xFFFF, _mm512_castps_si512(v), 16));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bits);
}

// max_pixel's channels 16 at a time in AVX-512, the same rule through compare masks; returns
// the first channel not done. Only where isa_allows_avx512(). (Why intrinsics: GCC 12 turns the
// compares of 64-byte generic vectors into scalar code under avx512f, which has no mask-to-vector
// move.)
template <bool kIndices, class T>
__attribute__((target("avx512f"))) int64_t max_channels_avx512(const T* first, T* best_out, int32_t* arg_out, Span h,
                                                               Span w, const PoolParams& p) {
  const int64_t C = p.c, row = p.w * C;
  const int32_t k_first = static_cast<int32_t>(h.k0 * p.pw + w.k0);
  int64_t c = 0;
  for (; c + 16 <= C; c += 16) {
    __m512 best = load16(first + c);
    __m512i arg = _mm512_set1_epi32(k_first);
    for (int64_t kh = h.k0; kh < h.k1; ++kh)
      for (int64_t kw = w.k0; kw < w.k1; ++kw) {
        const __m512 s = load16(first + (kh - h.k0) * row + (kw - w.k0) * C + c);
        // GT_OQ is false against a NaN best, so it stays; UNORD_Q(s, s): s is a NaN, so it wins.
        const __mmask16 greater = _mm512_cmp_ps_mask(s, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(s, s, _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, greater, s);
        if constexpr (kIndices)
          arg = _mm512_mask_mov_epi32(arg, greater, _mm512_set1_epi32(static_cast<int32_t>(kh * p.pw + kw)));
      }
    store16(best_out + c, best);
    if constexpr (kIndices) _mm512_storeu_si512(arg_out + c, arg);
  }
  return c;
}

// One output pixel, all channels: `first` points at the window's first valid input position.
// kIndices = false is the inference form (no indices written). `wide`: AVX-512 allowed.
template <bool kIndices, class T>
void max_pixel(const T* first, T* best_out, int32_t* arg_out, Span h, Span w, const PoolParams& p, bool wide) {
  const int64_t C = p.c, row = p.w * C;
  const int32_t k_first = static_cast<int32_t>(h.k0 * p.pw + w.k0);
  int64_t c = wide ? max_channels_avx512<kIndices>(first, best_out, arg_out, h, w, p) : 0;
  for (; c + kLanes <= C; c += kLanes) {
    F4 best = load(first + c);
    I4 arg = I4{} + k_first;
    for (int64_t kh = h.k0; kh < h.k1; ++kh)
      for (int64_t kw = w.k0; kw < w.k1; ++kw) {
        const F4 s = load(first + (kh - h.k0) * row + (kw - w.k0) * C + c);
        const I4 greater = (s > best) | (s != s);  // a NaN wins, and stays: s > NaN is false
        best = greater ? s : best;
        if constexpr (kIndices) arg = greater ? I4{} + static_cast<int32_t>(kh * p.pw + kw) : arg;
      }
    store(best_out + c, best);
    if constexpr (kIndices) store(arg_out + c, arg);
  }
  for (; c < C; ++c) {
    T best_bits = first[c];  // stored as read, as the vector loops do (a signalling NaN stays one)
    float best = widen<float>(best_bits);
    int32_t arg = k_first;
    for (int64_t kh = h.k0; kh < h.k1; ++kh)
      for (int64_t kw = w.k0; kw < w.k1; ++kw) {
        const T bits = first[(kh - h.k0) * row + (kw - w.k0) * C + c];
        const float s = widen<float>(bits);
        if (s > best || s != s) best = s, best_bits = bits, arg = static_cast<int32_t>(kh * p.pw + kw);
      }
    best_out[c] = best_bits;
    if constexpr (kIndices) arg_out[c] = arg;
  }
}

template <bool kIndices, class T>
void max_forward(const T* px, T* py, int32_t* pi, const PoolParams& p, bool parallel) {
  const int64_t rows = p.n * p.oh;
  const bool wide = p.c >= 16 && isa_allows_avx512();
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / p.oh;
    const Span h = span(r % p.oh, p.sh, p.pad_t, p.ph, p.h);
    for (int64_t ow = 0; ow < p.ow; ++ow) {
      const Span w = span(ow, p.sw, p.pad_l, p.pw, p.w);
      const int64_t o = (r * p.ow + ow) * p.c;
      const T* first = px + ((n * p.h + h.start + h.k0) * p.w + w.start + w.k0) * p.c;
      max_pixel<kIndices>(first, py + o, kIndices ? pi + o : nullptr, h, w, p, wide);
    }
  }
}

// dx of one window (`first`: its first valid input position): the gradient where the index
// names the position, zero elsewhere.
template <class T>
void select_pixel(const T* g, const int32_t* arg, T* first, Span h, Span w, const PoolParams& p) {
  const int64_t C = p.c, row = p.w * C;
  for (int64_t kh = h.k0; kh < h.k1; ++kh)
    for (int64_t kw = w.k0; kw < w.k1; ++kw) {
      T* d = first + (kh - h.k0) * row + (kw - w.k0) * C;
      const int32_t k = static_cast<int32_t>(kh * p.pw + kw);
      int64_t c = 0;
      if constexpr (std::is_same_v<T, float>) {
        for (; c + kLanes <= C; c += kLanes) store(d + c, load(arg + c) == k ? load(g + c) : F4{});
        for (; c < C; ++c) d[c] = arg[c] == k ? g[c] : 0.f;
      } else {  // bfloat16 bits, masked without a branch (the winners' positions are random)
        for (; c < C; ++c) d[c] = g[c] & static_cast<uint16_t>(-static_cast<int>(arg[c] == k));
      }
    }
}

}  // namespace

void max_pool2d_forward_f32(const Tensor& x, Tensor& y, Tensor* indices, const PoolParams& p) {
  const bool parallel = y.numel() * p.ph * p.pw > kParallelMin;
  int32_t* pi = indices ? indices->data<int32_t>() : nullptr;
  auto run = [&](auto* px, auto* py) {
    if (pi) max_forward<true>(px, py, pi, p, parallel);
    else max_forward<false>(px, py, pi, p, parallel);
  };
  if (x.dtype() == DType::bfloat16)
    run(static_cast<const uint16_t*>(x.raw_data()), static_cast<uint16_t*>(y.raw_data()));
  else
    run(x.data<float>(), y.data<float>());
}

bool max_pool2d_windows_disjoint(const PoolParams& p) { return p.sh >= p.ph && p.sw >= p.pw; }

namespace {
template <class T>
void select_windows(const T* pg, const int32_t* pi, T* pd, size_t bytes, const PoolParams& p) {
  // Every input position lies in at most one window, so each is written once; positions in no
  // window (gaps when stride > pool, the rows and columns 'valid' leaves over) need the zeros.
  const bool covered = p.sh == p.ph && p.sw == p.pw && p.oh * p.sh - p.pad_t >= p.h && p.ow * p.sw - p.pad_l >= p.w;
  if (!covered) std::memset(pd, 0, bytes);
  const int64_t rows = p.n * p.oh;
#pragma omp parallel for if (static_cast<int64_t>(bytes / sizeof(T)) > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / p.oh;
    const Span h = span(r % p.oh, p.sh, p.pad_t, p.ph, p.h);
    for (int64_t ow = 0; ow < p.ow; ++ow) {
      const Span w = span(ow, p.sw, p.pad_l, p.pw, p.w);
      const int64_t o = (r * p.ow + ow) * p.c;
      select_pixel(pg + o, pi + o, pd + ((n * p.h + h.start + h.k0) * p.w + w.start + w.k0) * p.c, h, w, p);
    }
  }
}
}  // namespace

void max_pool2d_backward_f32(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p) {
  if (!max_pool2d_windows_disjoint(p))
    fail<ValueError>("max_pool2d_backward_f32", "disjoint windows (strides >= pool_size)",
                     "pool (" + std::to_string(p.ph) + ", " + std::to_string(p.pw) + ") with strides (" +
                         std::to_string(p.sh) + ", " + std::to_string(p.sw) + ")",
                     "Use max_pool2d_backward_reference for overlapping windows.");
  if (grad.dtype() == DType::bfloat16)
    return select_windows(static_cast<const uint16_t*>(grad.raw_data()), indices.data<int32_t>(),
                          static_cast<uint16_t*>(dx.raw_data()), dx.nbytes(), p);
  select_windows(grad.data<float>(), indices.data<int32_t>(), dx.data<float>(), dx.nbytes(), p);
}


}  // namespace keras::cpu
