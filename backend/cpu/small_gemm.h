// A single-threaded float32 GEMM for small products inside one OpenMP iteration: the 16 per-block
// GEMMs of the Winograd convolutions (conv_winograd.h), with depths of 8 to a few hundred
// (channels in the forward pass, tiles in the weight gradient).
//
// Why not oneDNN's sgemm: called sequentially from inside a parallel region it packs both
// operands on every call, which at these depths costs as much as the products. Register tiles of
// 6 rows x 16 columns (ymm), or 12 x 32 and 12 x 16 (zmm) where AVX-512 is allowed, read A (either
// layout) and B's rows in place, so nothing is packed.
#pragma once
#include <cstdint>

namespace keras::cpu {

// True when small_gemm has a vector kernel on this CPU (AVX2 with FMA; its AVX-512 tiles run where
// cpu_isa.h allows AVX-512; the cap applies to both).
bool small_gemm_available();

// C = A B (or C += A B with `accumulate`): C (m x n, row-major, row stride ldc), A (m x k) read
// as a[i * a_row + p * a_col], so A or its transpose are passed as they lie in memory, B (k x n,
// row-major, row stride ldb). Without `accumulate` C's old values are never read. Each element
// is summed over k in order by one FMA chain (then, with `accumulate`, added to C's old value).
// Preconditions:
// small_gemm_available(), n a multiple of 8, m, n, k >= 0.
void small_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
                int64_t ldb, float* c, int64_t ldc, bool accumulate);

}  // namespace keras::cpu
