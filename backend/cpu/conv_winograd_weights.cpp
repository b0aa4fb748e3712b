// The weight (and bias) gradient by Winograd F(2x2, 3x3) in AVX2 (see conv_winograd.h).
//
// The forward pass is Y = A^T [sum_c U ⊙ V] A per tile, linear in U = G g G^T; so with the
// output gradient of each tile transformed as dM = A dY A^T (A^T = [1 1 1 0; 0 1 -1 -1]),
// dU[pos] = sum over tiles of V[pos]^T dM[pos] (a C x O GEMM per position, as deep as there are
// tiles) and dg = G^T dU G. The sums over tiles are cut into chunks fixed by the shapes (never
// by the thread count): each chunk sums its blocks of tiles in order into its own partial dU,
// and the partials are added in chunk order, so the bits do not depend on the threads.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/conv_winograd_tiles.h"
#include "backend/cpu/small_gemm.h"

namespace keras::cpu {
namespace {

using namespace winograd;

// At most this many partial sums: enough to share the blocks between threads, few enough that
// adding them costs little.
constexpr int64_t kMaxChunks = 8;

// dM[pos][b][o] = (A dY A^T)[pos] for tiles [t0, t0 + nb) of dy (N, OH, OW, O), outputs past an
// odd edge counting as zero; db[o] += the tiles' dy.
__attribute__((target("avx2,fma"))) void transform_output_grads(const Tiling& tl, const float* dy, int64_t O,
                                                                int64_t t0, int64_t nb, int64_t cap, float* dm,
                                                                float* db) {
  const int64_t per_image = tl.th() * tl.tw(), plane = plane_of(cap, O);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t t = t0 + b, n = t / per_image, oy0 = 2 * (t % per_image / tl.tw()), ox0 = 2 * (t % tl.tw());
    const bool row1 = oy0 + 1 < tl.oh, col1 = ox0 + 1 < tl.ow;
    const float* d0 = dy + ((n * tl.oh + oy0) * tl.ow + ox0) * O;
    float* mb = dm + b * O;
    for (int64_t o0 = 0; o0 < O; o0 += 8) {
      __m256 d[2][2];
      d[0][0] = _mm256_loadu_ps(d0 + o0);
      d[0][1] = col1 ? _mm256_loadu_ps(d0 + O + o0) : zero;
      d[1][0] = row1 ? _mm256_loadu_ps(d0 + tl.ow * O + o0) : zero;
      d[1][1] = row1 && col1 ? _mm256_loadu_ps(d0 + (tl.ow + 1) * O + o0) : zero;
      if (db) {
        const __m256 sum = _mm256_add_ps(_mm256_add_ps(d[0][0], d[0][1]), _mm256_add_ps(d[1][0], d[1][1]));
        _mm256_storeu_ps(db + o0, _mm256_add_ps(_mm256_loadu_ps(db + o0), sum));
      }
      __m256 r[4][2];  // A dY: over the rows
#pragma GCC unroll 2
      for (int s = 0; s < 2; ++s) {
        r[0][s] = d[0][s];
        r[1][s] = _mm256_add_ps(d[0][s], d[1][s]);
        r[2][s] = _mm256_sub_ps(d[0][s], d[1][s]);
        r[3][s] = _mm256_sub_ps(zero, d[1][s]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {  // (A dY) A^T: over the columns
        float* row = mb + i * 4 * plane + o0;
        _mm256_storeu_ps(row, r[i][0]);
        _mm256_storeu_ps(row + plane, _mm256_add_ps(r[i][0], r[i][1]));
        _mm256_storeu_ps(row + 2 * plane, _mm256_sub_ps(r[i][0], r[i][1]));
        _mm256_storeu_ps(row + 3 * plane, _mm256_sub_ps(zero, r[i][1]));
      }
    }
  }
}

// dk[.., c, o0..o0+8) = G^T dU G from the chunks' partial dU (each 16 x C x O, added in chunk
// order) with G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1].
__attribute__((target("avx2,fma"))) void finish_kernel(const float* parts, int64_t chunks, int64_t part_size,
                                                       int64_t C, int64_t O, int64_t c, int64_t o0, float* dk) {
  const int64_t plane = C * O;
  const __m256 half = _mm256_set1_ps(0.5f);
  __m256 u[16];
  for (int pos = 0; pos < 16; ++pos) {
    __m256 sum = _mm256_loadu_ps(parts + pos * plane + c * O + o0);
    for (int64_t k = 1; k < chunks; ++k) sum = _mm256_add_ps(sum, _mm256_loadu_ps(parts + k * part_size + pos * plane + c * O + o0));
    u[pos] = sum;
  }
  __m256 s[4][3];  // dU G: over the columns
  for (int i = 0; i < 4; ++i) {
    const __m256 mid = _mm256_mul_ps(half, _mm256_add_ps(u[i * 4 + 1], u[i * 4 + 2]));
    s[i][0] = _mm256_add_ps(u[i * 4], mid);
    s[i][1] = _mm256_mul_ps(half, _mm256_sub_ps(u[i * 4 + 1], u[i * 4 + 2]));
    s[i][2] = _mm256_add_ps(mid, u[i * 4 + 3]);
  }
  for (int b = 0; b < 3; ++b) {  // G^T (dU G): over the rows
    const __m256 mid = _mm256_mul_ps(half, _mm256_add_ps(s[1][b], s[2][b]));
    _mm256_storeu_ps(dk + ((0 * 3 + b) * C + c) * O + o0, _mm256_add_ps(s[0][b], mid));
    _mm256_storeu_ps(dk + ((1 * 3 + b) * C + c) * O + o0, _mm256_mul_ps(half, _mm256_sub_ps(s[1][b], s[2][b])));
    _mm256_storeu_ps(dk + ((2 * 3 + b) * C + c) * O + o0, _mm256_add_ps(mid, s[3][b]));
  }
}

}  // namespace

bool conv2d_backward_weights_winograd_supported(const Shape& ks, const ConvParams& p) { return shape_fits(ks, p); }

void conv2d_backward_weights_winograd(const float* x, const Shape& xs, const float* dy, const Shape& ys, float* dk,
                                      const Shape& ks, float* db, const ConvParams& p) {
  const int64_t C = ks[2], O = ks[3];
  const Tiling tl{x, xs[0], xs[1], xs[2], C, ys[1], ys[2], p.pad_top, p.pad_left};
  const int64_t tiles = tl.tiles(), cap = block_capacity(C, O), blocks = (tiles + cap - 1) / cap;
  const int64_t chunks = std::clamp<int64_t>(blocks, 1, kMaxChunks), part_size = 16 * C * O + O;
  thread_local std::vector<float> partials;
  partials.assign(static_cast<size_t>(chunks * part_size), 0.f);
  float* const parts = partials.data();  // the caller's buffer, shared by the team through this pointer
#pragma omp parallel
  {
    thread_local std::vector<float> scratch;
    const int64_t v_plane = plane_of(cap, C), m_plane = plane_of(cap, O);
    const auto need = static_cast<size_t>(16 * (v_plane + m_plane));
    if (scratch.size() < need) scratch.resize(need);
    float *v = scratch.data(), *dm = v + 16 * v_plane;
#pragma omp for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      float* du = parts + chunk * part_size;
      for (int64_t blk = blocks * chunk / chunks; blk < blocks * (chunk + 1) / chunks; ++blk) {
        const int64_t t0 = blk * cap, nb = std::min(cap, tiles - t0);
        transform_inputs(tl, t0, nb, cap, v);
        transform_output_grads(tl, dy, O, t0, nb, cap, dm, db ? du + 16 * C * O : nullptr);
        for (int pos = 0; pos < 16; ++pos)  // dU[pos] (C x O) += V[pos]^T dM[pos]
          small_gemm(C, O, nb, v + pos * v_plane, 1, C, dm + pos * m_plane, O, du + pos * C * O, O, true);
      }
    }
#pragma omp for schedule(static)
    for (int64_t e = 0; e < C * (O / 8); ++e) finish_kernel(parts, chunks, part_size, C, O, e / (O / 8), e % (O / 8) * 8, dk);
  }
  if (db)
    for (int64_t o = 0; o < O; ++o) {
      float sum = 0.f;
      for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += parts[chunk * part_size + 16 * C * O + o];
      db[o] = sum;
    }
}

}  // namespace keras::cpu
