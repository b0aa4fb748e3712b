// AVX-512 versions of norm_rows.h's row loops (backend/cpu/norm_rows_avx512.cpp), float32 and
// bfloat16, with the same contracts and bit-identical results; norm_rows.h's functions call them
// where rows_available(). Any C (the channel tail is masked).
#pragma once
#include <cstdint>

#include "backend/cpu/norm_rows.h"

namespace keras::cpu::avx512 {

// True where cpu::isa_allows_avx512() (backend/cpu/cpu_isa.h).
bool rows_available();

void moment_rows(const float* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2);
void moment_rows(const uint16_t* x, int64_t rows, int64_t C, const float* shift, float* s1, float* s2);
void affine_rows(const float* x, float* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu, float hi);
void affine_rows(const uint16_t* x, uint16_t* y, int64_t rows, int64_t C, const float* a, const float* b, bool relu,
                 float hi);
void affine_add_relu_rows(const float* x, const float* r, float* z, int64_t rows, int64_t C, const float* a,
                          const float* b);
void affine_add_relu_rows(const uint16_t* x, const uint16_t* r, uint16_t* z, int64_t rows, int64_t C, const float* a,
                          const float* b);
void grad_sum_rows(const float* g, const float* x, int64_t rows, int64_t C, const float* mu, ReluRows relu, float* s1,
                   float* s2);
void grad_sum_rows(const uint16_t* g, const uint16_t* x, int64_t rows, int64_t C, const float* mu, ReluRows relu,
                   float* s1, float* s2);
void grad_dx_rows(const float* g, const float* x, float* dx, int64_t rows, int64_t C, const float* A, const float* B,
                  const float* K, ReluRows relu);
void grad_dx_rows(const uint16_t* g, const uint16_t* x, uint16_t* dx, int64_t rows, int64_t C, const float* A,
                  const float* B, const float* K, ReluRows relu);

}  // namespace keras::cpu::avx512
