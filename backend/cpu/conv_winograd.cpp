// Winograd F(2x2, 3x3) in AVX2 (see conv_winograd.h).
//
// With B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] and
// A^T = [1 1 1 0; 0 1 -1 -1]: V = B^T d B per 4x4 input tile and channel, U = G g G^T per
// channel pair, M[pos] = V[pos] U[pos] summed over the input channels for each of the 16
// positions, Y = A^T M A the tile's 2x2 outputs (conv_winograd_tiles.h numbers the tiles and
// transforms the inputs). A block of consecutive tiles is one OpenMP iteration: its V
// (16 x tiles x C) and M (16 x tiles x O) live in a per-thread scratch sized to stay in L2.
#include "backend/cpu/conv_winograd.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/conv_winograd_tiles.h"
#include "backend/cpu/small_gemm.h"

namespace keras::cpu {
namespace {

using namespace winograd;

// The forward pass over the tiling of its input: y (N, OH, OW, O) = act(conv + bias).
struct Problem {
  Tiling t;
  float* y;
  int64_t o;
  const float* bias;
  bool relu;
};

// U = G g G^T for every channel pair of the kernel k (3, 3, C, O), as U[pos][c][o]; `turned`
// transforms the input gradient's kernel k'(kh, kw, o, c) = k(2 - kh, 2 - kw, c, o) instead, as
// U[pos][o][c]. Vectors run along k's contiguous outputs either way.
__attribute__((target("avx2,fma"))) void transform_kernel(const float* k, int64_t C, int64_t O, bool turned, float* u) {
  const int64_t plane = C * O;
  const __m256 half = _mm256_set1_ps(0.5f);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c)
    for (int64_t o = 0; o < O; o += 8) {
      __m256 g[3][3], t[4][3], r[16];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const int64_t kh = turned ? 2 - i : i, kw = turned ? 2 - j : j;
          g[i][j] = _mm256_loadu_ps(k + ((kh * 3 + kw) * C + c) * O + o);
        }
      for (int j = 0; j < 3; ++j) {  // G g: over the kernel rows
        t[0][j] = g[0][j];
        t[1][j] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(g[0][j], g[1][j]), g[2][j]));
        t[2][j] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(g[0][j], g[1][j]), g[2][j]));
        t[3][j] = g[2][j];
      }
      for (int i = 0; i < 4; ++i) {  // (G g) G^T: over the kernel columns
        r[i * 4 + 0] = t[i][0];
        r[i * 4 + 1] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(t[i][0], t[i][1]), t[i][2]));
        r[i * 4 + 2] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(t[i][0], t[i][1]), t[i][2]));
        r[i * 4 + 3] = t[i][2];
      }
      for (int pos = 0; pos < 16; ++pos) {
        if (!turned) {
          _mm256_storeu_ps(u + pos * plane + c * O + o, r[pos]);
          continue;
        }
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, r[pos]);
        for (int l = 0; l < 8; ++l) u[pos * plane + (o + l) * C + c] = lanes[l];
      }
    }
}

// Y = A^T M A for tiles [t0, t0 + nb), plus bias and activation, into y (outputs past the edge
// of an odd-sized output are not stored).
__attribute__((target("avx2,fma"))) void transform_outputs(const Problem& g, int64_t t0, int64_t nb, int64_t cap,
                                                           const float* m) {
  const Tiling& tl = g.t;
  const int64_t per_image = tl.th() * tl.tw(), O = g.o, plane = plane_of(cap, O);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t t = t0 + b, n = t / per_image, oy0 = 2 * (t % per_image / tl.tw()), ox0 = 2 * (t % tl.tw());
    const bool row1 = oy0 + 1 < tl.oh, col1 = ox0 + 1 < tl.ow;
    const float* mb = m + b * O;
    const int64_t at = ((n * tl.oh + oy0) * tl.ow + ox0) * O;  // the tile's first output; row 1 is ow * O on
    for (int64_t o0 = 0; o0 < O; o0 += 8) {
      __m256 s[2][4];  // A^T M: over the rows of M
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256 m0 = _mm256_loadu_ps(mb + (0 * 4 + j) * plane + o0), m1 = _mm256_loadu_ps(mb + (1 * 4 + j) * plane + o0);
        const __m256 m2 = _mm256_loadu_ps(mb + (2 * 4 + j) * plane + o0), m3 = _mm256_loadu_ps(mb + (3 * 4 + j) * plane + o0);
        s[0][j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
        s[1][j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
      }
      const __m256 bias = g.bias ? _mm256_loadu_ps(g.bias + o0) : _mm256_setzero_ps();
      __m256 out[2][2];
#pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        out[i][0] = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s[i][0], s[i][1]), s[i][2]), bias);
        out[i][1] = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(s[i][1], s[i][2]), s[i][3]), bias);
        if (g.relu)  // max(x, 0) gives 0 for NaN; blend the NaN lanes back (relu keeps NaN)
          for (__m256& v : out[i])
            v = _mm256_blendv_ps(_mm256_max_ps(v, _mm256_setzero_ps()), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      }
      _mm256_storeu_ps(g.y + at + o0, out[0][0]);
      if (col1) _mm256_storeu_ps(g.y + at + O + o0, out[0][1]);
      if (row1) {
        _mm256_storeu_ps(g.y + at + tl.ow * O + o0, out[1][0]);
        if (col1) _mm256_storeu_ps(g.y + at + (tl.ow + 1) * O + o0, out[1][1]);
      }
    }
  }
}

// The forward pass with transformed weights u (16 x C x O).
void run(const Problem& g, const float* u) {
  const int64_t tiles = g.t.tiles(), C = g.t.c;
  if (tiles == 0 || g.o == 0) return;
  const int64_t cap = block_capacity(C, g.o);
  const int64_t blocks = (tiles + cap - 1) / cap;
#pragma omp parallel
  {
    thread_local std::vector<float> scratch;
    const int64_t v_plane = plane_of(cap, C), m_plane = plane_of(cap, g.o);
    const auto need = static_cast<size_t>(16 * (v_plane + m_plane));
    if (scratch.size() < need) scratch.resize(need);
    float *v = scratch.data(), *m = v + 16 * v_plane;
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t t0 = blk * cap, nb = std::min(cap, tiles - t0);
      transform_inputs(g.t, t0, nb, cap, v);
      for (int pos = 0; pos < 16; ++pos)
        small_gemm(nb, g.o, C, v + pos * v_plane, C, 1, u + pos * C * g.o, g.o, m + pos * m_plane, g.o, false);
      transform_outputs(g, t0, nb, cap, m);
    }
  }
}

// The transformed kernel, a buffer of the calling thread (16 x C x O floats).
float* kernel_scratch(int64_t C, int64_t O) {
  thread_local std::vector<float> u;
  u.resize(static_cast<size_t>(16 * C * O));
  return u.data();
}

}  // namespace

bool conv2d_winograd_supported(const Shape& ks, const ConvParams& p, const std::string& activation) {
  return shape_fits(ks, p) && (activation == "linear" || activation == "relu");
}

bool conv2d_backward_data_winograd_supported(const Shape& ks, const ConvParams& p) { return shape_fits(ks, p); }

void conv2d_winograd(const float* x, const Shape& xs, const float* kernel, const Shape& ks, const float* bias, float* y,
                     const Shape& ys, const ConvParams& p, const std::string& activation) {
  float* u = kernel_scratch(ks[2], ks[3]);
  transform_kernel(kernel, ks[2], ks[3], false, u);
  run({{x, xs[0], xs[1], xs[2], xs[3], ys[1], ys[2], p.pad_top, p.pad_left}, y, ys[3], bias, activation == "relu"}, u);
}

void conv2d_backward_data_winograd(const float* dy, const Shape& ys, const float* kernel, const Shape& ks, float* dx,
                                   const Shape& xs, const ConvParams& p) {
  float* u = kernel_scratch(ks[2], ks[3]);
  transform_kernel(kernel, ks[2], ks[3], true, u);  // the turned kernel: O inputs, C outputs
  run({{dy, ys[0], ys[1], ys[2], ys[3], xs[1], xs[2], 2 - p.pad_top, 2 - p.pad_left}, dx, xs[3], nullptr, false}, u);
}

}  // namespace keras::cpu
