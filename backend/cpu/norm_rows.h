// The row loops of the batch-normalization kernels (backend/cpu/norm_kernels.cpp), compiled for
// AVX-512, AVX2 and the baseline and chosen by the CPU at load time: the kernels are memory-bound
// passes over (rows, C) activations whose baseline (SSE2) code left half the bandwidth unused and
// could not narrow float32 to bfloat16 in vector registers at all. Activations are float32 or
// bfloat16 (uint16_t bits, computed in float32); per-channel arrays are float32, C long.
#pragma once
#include <cstdint>

namespace keras::cpu {

// The ReLU window of a fused BatchNormalization -> ReLU: y = x * a[c] + b[c] passes where
// 0 < y < hi. a == nullptr: no ReLU.
struct ReluRows {
  const float* a = nullptr;
  const float* b = nullptr;
  float hi = 0;
};

// Moments: for each row, d = x - shift[c]; s1[c] += d, s2[c] += d * d.
void moment_rows(const float* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2);
void moment_rows(const uint16_t* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2);

// y = x * a[c] + b[c], clamped to [0, hi] first when `relu` (hi > 0; a NaN stays NaN).
void affine_rows(const float* x, float* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu, float hi);
void affine_rows(const uint16_t* x, uint16_t* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu,
                 float hi);

// A BatchNormalization -> Add -> ReLU residual block's output: z = relu(y + r), y = x * a[c] + b[c]
// stored as S first and the sum rounded to S, as the separate ops round them (a NaN stays NaN).
void affine_add_relu_rows(const float* x, const float* r, float* z, int64_t rows, int64_t C, const float* a,
                          const float* b);
void affine_add_relu_rows(const uint16_t* x, const uint16_t* r, uint16_t* z, int64_t rows, int64_t C, const float* a,
                          const float* b);

// BatchNormalization's moving statistics: v = v * keep + x * take, both products rounded, then the
// sum (no fused multiply-add: the bits of multiply, multiply and add).
void moving_average_rows(float* v, const float* x, int64_t n, float keep, float take);
void moving_average_rows(double* v, const double* x, int64_t n, double keep, double take);

// The backward's first pass: gm = g masked by the window; s1[c] += gm, s2[c] += gm * (x - mu[c]).
void grad_sum_rows(const float* g, const float* x, int64_t rows, int64_t C, const float* mu, ReluRows relu, float* s1,
                   float* s2);
void grad_sum_rows(const uint16_t* g, const uint16_t* x, int64_t rows, int64_t C, const float* mu, ReluRows relu,
                   float* s1, float* s2);

// The backward's second pass: dx = A[c] * gm + B[c] * x + K[c].
void grad_dx_rows(const float* g, const float* x, float* dx, int64_t rows, int64_t C, const float* A, const float* B,
                  const float* K, ReluRows relu);
void grad_dx_rows(const uint16_t* g, const uint16_t* x, uint16_t* dx, int64_t rows, int64_t C, const float* A,
                  const float* B, const float* K, ReluRows relu);

}  // namespace keras::cpu
