// backend/cpu/norm_rows.h: one always-inlined body per loop, instantiated for float32 and
// bfloat16 inside functions cloned per ISA, which hand over to the AVX-512 intrinsics of
// norm_rows_avx512.h where the CPU has them.
#include "backend/cpu/norm_rows.h"

#include "backend/cpu/bf16_convert.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/cpu/norm_rows_avx512.h"

namespace keras::cpu {
namespace {

// A select, not a branch, so that it vectorises into a blend (a branch on random signs
// mispredicts half the time).
[[gnu::always_inline]] inline float window(float g, float xv, float a, float b, float hi) {
  const float y = xv * a + b;
  return (y > 0.f) & (y < hi) ? g : 0.f;
}

template <class S>
[[gnu::always_inline]] inline void moments_body(const S* __restrict x, int64_t rows, int64_t C,
                                                const float* __restrict shift, float* __restrict s1,
                                                float* __restrict s2) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float d = widen<float>(x[m * C + c]) - shift[c];
      s1[c] += d;
      s2[c] += d * d;
    }
}

template <class S>
[[gnu::always_inline]] inline void affine_body(const S* __restrict x, S* __restrict y, int64_t rows, int64_t C,
                                               const float* __restrict a, const float* __restrict b, bool relu,
                                               float hi) {
  for (int64_t m = 0; m < rows; ++m) {
    const S* __restrict xr = x + m * C;
    S* __restrict yr = y + m * C;
    if (relu) {
      for (int64_t c = 0; c < C; ++c) {
        const float v = widen<float>(xr[c]) * a[c] + b[c];
        const float clamped = v > 0.f ? (v < hi ? v : hi) : 0.f;
        yr[c] = narrow<S>(v != v ? v : clamped);
      }
    } else {
      for (int64_t c = 0; c < C; ++c) yr[c] = narrow<S>(widen<float>(xr[c]) * a[c] + b[c]);
    }
  }
}

template <class S>
[[gnu::always_inline]] inline void affine_add_relu_body(const S* __restrict x, const S* __restrict r, S* __restrict z,
                                                        int64_t rows, int64_t C, const float* __restrict a,
                                                        const float* __restrict b) {
  for (int64_t m = 0; m < rows; ++m) {
    const S* __restrict xr = x + m * C;
    const S* __restrict rr = r + m * C;
    S* __restrict zr = z + m * C;
    for (int64_t c = 0; c < C; ++c) {
      const float y = widen<float>(narrow<S>(widen<float>(xr[c]) * a[c] + b[c]));
      const float v = widen<float>(narrow<S>(y + widen<float>(rr[c])));
      zr[c] = narrow<S>((v > 0.f) | (v != v) ? v : 0.f);
    }
  }
}

template <class S>
[[gnu::always_inline]] inline void grad_sum_body(const S* __restrict g, const S* __restrict x, int64_t rows, int64_t C,
                                                 const float* __restrict mu, ReluRows relu, float* __restrict s1,
                                                 float* __restrict s2) {
  const float* __restrict ra = relu.a;
  const float* __restrict rb = relu.b;
  for (int64_t m = 0; m < rows; ++m) {
    const S* __restrict gr = g + m * C;
    const S* __restrict xr = x + m * C;
    if (ra) {
      for (int64_t c = 0; c < C; ++c) {
        const float xv = widen<float>(xr[c]), gm = window(widen<float>(gr[c]), xv, ra[c], rb[c], relu.hi);
        s1[c] += gm;
        s2[c] += gm * (xv - mu[c]);
      }
    } else {
      for (int64_t c = 0; c < C; ++c) {
        const float gm = widen<float>(gr[c]);
        s1[c] += gm;
        s2[c] += gm * (widen<float>(xr[c]) - mu[c]);
      }
    }
  }
}

template <class S>
[[gnu::always_inline]] inline void grad_dx_body(const S* __restrict g, const S* __restrict x, S* __restrict dx,
                                                int64_t rows, int64_t C, const float* __restrict A,
                                                const float* __restrict B, const float* __restrict K, ReluRows relu) {
  const float* __restrict ra = relu.a;
  const float* __restrict rb = relu.b;
  for (int64_t m = 0; m < rows; ++m) {
    const S* __restrict gr = g + m * C;
    const S* __restrict xr = x + m * C;
    S* __restrict d = dx + m * C;
    if (ra) {
      for (int64_t c = 0; c < C; ++c) {
        const float xv = widen<float>(xr[c]);
        d[c] = narrow<S>(A[c] * window(widen<float>(gr[c]), xv, ra[c], rb[c], relu.hi) + B[c] * xv + K[c]);
      }
    } else {
      for (int64_t c = 0; c < C; ++c) {
        const float xv = widen<float>(xr[c]);
        d[c] = narrow<S>(A[c] * widen<float>(gr[c]) + B[c] * xv + K[c]);
      }
    }
  }
}

}  // namespace

KERAS_ISA_CLONES void moment_rows(const float* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2) {
  if (avx512::rows_available()) return avx512::moment_rows(x, rows, C, shift, s1, s2);
  moments_body(x, rows, C, shift, s1, s2);
}
KERAS_ISA_CLONES void moment_rows(const uint16_t* x, int64_t rows, int64_t C, const float* shift, float* s1,
                                  float* s2) {
  if (avx512::rows_available()) return avx512::moment_rows(x, rows, C, shift, s1, s2);
  moments_body(x, rows, C, shift, s1, s2);
}
KERAS_ISA_CLONES void affine_rows(const float* x, float* y, int64_t rows, int64_t C, const float* a, const float* b,
                                  bool relu, float hi) {
  if (avx512::rows_available()) return avx512::affine_rows(x, y, rows, C, a, b, relu, hi);
  affine_body(x, y, rows, C, a, b, relu, hi);
}
KERAS_ISA_CLONES void affine_rows(const uint16_t* x, uint16_t* y, int64_t rows, int64_t C, const float* a,
                                  const float* b, bool relu, float hi) {
  if (avx512::rows_available()) return avx512::affine_rows(x, y, rows, C, a, b, relu, hi);
  affine_body(x, y, rows, C, a, b, relu, hi);
}
KERAS_ISA_CLONES void affine_add_relu_rows(const float* x, const float* r, float* z, int64_t rows, int64_t C,
                                           const float* a, const float* b) {
  if (avx512::rows_available()) return avx512::affine_add_relu_rows(x, r, z, rows, C, a, b);
  affine_add_relu_body(x, r, z, rows, C, a, b);
}
KERAS_ISA_CLONES void affine_add_relu_rows(const uint16_t* x, const uint16_t* r, uint16_t* z, int64_t rows, int64_t C,
                                           const float* a, const float* b) {
  if (avx512::rows_available()) return avx512::affine_add_relu_rows(x, r, z, rows, C, a, b);
  affine_add_relu_body(x, r, z, rows, C, a, b);
}
void moving_average_rows(float* v, const float* x, int64_t n, float keep, float take) {
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] * keep + x[i] * take;
}
void moving_average_rows(double* v, const double* x, int64_t n, double keep, double take) {
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] * keep + x[i] * take;
}
KERAS_ISA_CLONES void grad_sum_rows(const float* g, const float* x, int64_t rows, int64_t C, const float* mu,
                                    ReluRows relu, float* s1, float* s2) {
  if (avx512::rows_available()) return avx512::grad_sum_rows(g, x, rows, C, mu, relu, s1, s2);
  grad_sum_body(g, x, rows, C, mu, relu, s1, s2);
}
KERAS_ISA_CLONES void grad_sum_rows(const uint16_t* g, const uint16_t* x, int64_t rows, int64_t C, const float* mu,
                                    ReluRows relu, float* s1, float* s2) {
  if (avx512::rows_available()) return avx512::grad_sum_rows(g, x, rows, C, mu, relu, s1, s2);
  grad_sum_body(g, x, rows, C, mu, relu, s1, s2);
}
KERAS_ISA_CLONES void grad_dx_rows(const float* g, const float* x, float* dx, int64_t rows, int64_t C, const float* A,
                                   const float* B, const float* K, ReluRows relu) {
  if (avx512::rows_available()) return avx512::grad_dx_rows(g, x, dx, rows, C, A, B, K, relu);
  grad_dx_body(g, x, dx, rows, C, A, B, K, relu);
}
KERAS_ISA_CLONES void grad_dx_rows(const uint16_t* g, const uint16_t* x, uint16_t* dx, int64_t rows, int64_t C,
                                   const float* A, const float* B, const float* K, ReluRows relu) {
  if (avx512::rows_available()) return avx512::grad_dx_rows(g, x, dx, rows, C, A, B, K, relu);
  grad_dx_body(g, x, dx, rows, C, A, B, K, relu);
}

}  // namespace keras::cpu
