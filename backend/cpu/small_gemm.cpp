// The small single-threaded GEMM (see small_gemm.h): register tiles of R rows x V vectors, in ymm
// registers on AVX2 and zmm where AVX-512 is allowed.
#include "backend/cpu/small_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "backend/cpu/cpu_isa.h"

namespace keras::cpu {
namespace {

// One tile: C[0..R) x [0..8V) at the caller's offsets. 6 x 2 uses 12 accumulators, 2 loads of B
// and one broadcast register: the 16 ymm registers without spills.
template <int R, int V>
__attribute__((target("avx2,fma"))) void tile(int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
                                              int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  __m256 acc[R][V];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
#pragma GCC unroll 4  // as dense_panels' tiles
  for (int64_t p = 0; p < k; ++p) {
    __m256 bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_ps(b + p * ldb + 8 * v);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * a_row + p * a_col);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(x, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      float* out = c + r * ldc + 8 * v;
      _mm256_storeu_ps(out, accumulate ? _mm256_add_ps(_mm256_loadu_ps(out), acc[r][v]) : acc[r][v]);
    }
}

// The same tile in zmm registers: 12 x 2 uses 24 accumulators, 2 loads of B and one broadcast,
// 27 of the 32 zmm registers without spills.
template <int R, int V>
__attribute__((target("avx512f"))) void tile_avx512(int64_t k, const float* a, int64_t a_row, int64_t a_col,
                                                    const float* b, int64_t ldb, float* c, int64_t ldc,
                                                    bool accumulate) {
  __m512 acc[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(b + p * ldb + 16 * v);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * a_row + p * a_col]);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      float* out = c + r * ldc + 16 * v;
      _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), acc[r][v]) : acc[r][v]);
    }
}

using TileFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, bool);

template <int V, int... R>
constexpr std::array<TileFn, sizeof...(R)> avx512_tiles(std::integer_sequence<int, R...>) {
  return {tile_avx512<R + 1, V>...};
}

// C's leading columns from 12-row zmm tiles: 32 columns at a time, then 16; what is left (8 or
// none) the caller's ymm tiles take. Returns the first column not done.
int64_t avx512_columns(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
                       const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  static constexpr auto two = avx512_tiles<2>(std::make_integer_sequence<int, 12>());
  static constexpr auto one = avx512_tiles<1>(std::make_integer_sequence<int, 12>());
  int64_t j = 0;
  for (; n - j >= 16; j += n - j >= 32 ? 32 : 16) {
    const TileFn* tiles = n - j >= 32 ? two.data() : one.data();
    for (int64_t i = 0; i < m; i += 12)
      tiles[std::min<int64_t>(12, m - i) - 1](k, a + i * a_row, a_row, a_col, b + j, ldb, c + i * ldc + j, ldc,
                                              accumulate);
  }
  return j;
}

template <int V, class... Args>
void row_block(int64_t rows, Args... args) {
  switch (rows) {
    case 1: return tile<1, V>(args...);
    case 2: return tile<2, V>(args...);
    case 3: return tile<3, V>(args...);
    case 4: return tile<4, V>(args...);
    case 5: return tile<5, V>(args...);
    default: return tile<6, V>(args...);
  }
}

}  // namespace

bool small_gemm_available() { return isa_allows_avx2(); }

void small_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
                int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  // Column blocks outermost: a block's k x 16 (or 32) panel of B stays in L1 while every row block
  // reads it.
  const int64_t first = isa_allows_avx512() ? avx512_columns(m, n, k, a, a_row, a_col, b, ldb, c, ldc, accumulate) : 0;
  for (int64_t j = first; j < n; j += 16)
    for (int64_t i = 0; i < m; i += 6) {
      const int64_t rows = m - i < 6 ? m - i : 6;
      const float* ai = a + i * a_row;
      float* ci = c + i * ldc + j;
      if (n - j >= 16)
        row_block<2>(rows, k, ai, a_row, a_col, b + j, ldb, ci, ldc, accumulate);
      else
        row_block<1>(rows, k, ai, a_row, a_col, b + j, ldb, ci, ldc, accumulate);
    }
}

}  // namespace keras::cpu
