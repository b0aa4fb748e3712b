// The direct AVX2 weight-gradient kernel (see conv_backward_weights_direct.h).
//
// Work is split into tiles: a tap (kh, kw), up to 6 consecutive input channels c (broadcast
// scalars) and 8 or 16 consecutive outputs o (one or two vectors), so 12 accumulators, 2 loads
// and a broadcast fill 15 of AVX2's 16 registers. Bias tiles sum dy alone. Pixels are visited
// in blocks (one image, or a band of its output rows) small enough that the block's x and dy
// stay in L2 while every tile of the calling thread streams through them; tiles are assigned to
// threads once, so each dk element has one owner and no reduction or barrier is needed.
#include "backend/cpu/conv_backward_weights_direct.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/conv_backward_weights_avx512.h"
#include "backend/cpu/conv_direct.h"

namespace keras::cpu {
namespace {

struct Geometry {
  const float* x;
  const float* dy;
  float* dk;
  float* db;
  int64_t n, h, w, c;   // input
  int64_t oh, ow, o;    // output
  int64_t kh, kw, cg;   // kernel taps and channels per group
  int64_t og;           // outputs per group
  ConvParams p;
};

struct Tile {
  int64_t tap = 0;      // kh * KW + kw; unused by bias tiles
  int64_t c0 = 0;       // first channel within the group
  int64_t x_channel = 0;  // first channel of x (group offset included)
  int64_t o0 = 0;       // first output
  int rows = 0;         // channels, 1..6; 0 = a bias tile
  int vecs = 1;         // 8-wide output vectors, 1 or 2
};

// Outputs [lo, hi) along one axis whose input index out * stride + offset lies in [0, in).
void valid_range(int64_t in, int64_t out, int64_t stride, int64_t offset, int64_t& lo, int64_t& hi) {
  lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  hi = in - 1 - offset < 0 ? 0 : std::min(out, (in - 1 - offset) / stride + 1);
  hi = std::max(hi, lo);
}

__attribute__((target("avx2,fma"))) inline void add_to(float* q, __m256 v) {
  _mm256_storeu_ps(q, _mm256_add_ps(_mm256_loadu_ps(q), v));
}

template <int R, int V>
__attribute__((target("avx2,fma"))) void weight_tile(const Geometry& g, const Tile& t, int64_t n, int64_t oy_begin,
                                                     int64_t oy_end) {
  const ConvParams& p = g.p;
  int64_t kh = t.tap / g.kw, kw = t.tap % g.kw;
  int64_t off_y = kh * p.dilation_h - p.pad_top, off_x = kw * p.dilation_w - p.pad_left;
  int64_t y_lo, y_hi, x_lo, x_hi;
  valid_range(g.h, g.oh, p.stride_h, off_y, y_lo, y_hi);
  valid_range(g.w, g.ow, p.stride_w, off_x, x_lo, x_hi);
  y_lo = std::max(y_lo, oy_begin), y_hi = std::min(y_hi, oy_end);
  if (y_lo >= y_hi || x_lo >= x_hi) return;
  // Named accumulators: GCC keeps an array of them in registers but also stores it to the
  // stack on every pixel, which halves the FMA rate.
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00,
         a40 = a00, a41 = a00, a50 = a00, a51 = a00;
  const int64_t x_step = p.stride_w * g.c;
  for (int64_t oy = y_lo; oy < y_hi; ++oy) {
    int64_t iy = oy * p.stride_h + off_y;
    const float* xp = g.x + ((n * g.h + iy) * g.w + x_lo * p.stride_w + off_x) * g.c + t.x_channel;
    const float* dp = g.dy + ((n * g.oh + oy) * g.ow + x_lo) * g.o + t.o0;
    for (int64_t ox = x_lo; ox < x_hi; ++ox, xp += x_step, dp += g.o) {
      __m256 d0 = _mm256_loadu_ps(dp), d1 = V > 1 ? _mm256_loadu_ps(dp + 8) : d0;
#define KERAS_DW_ROW(r, lo, hi)                        \
  if constexpr (R > r) {                               \
    __m256 b = _mm256_broadcast_ss(xp + r);            \
    lo = _mm256_fmadd_ps(b, d0, lo);                   \
    if constexpr (V > 1) hi = _mm256_fmadd_ps(b, d1, hi); \
  }
      KERAS_DW_ROW(0, a00, a01)
      KERAS_DW_ROW(1, a10, a11)
      KERAS_DW_ROW(2, a20, a21)
      KERAS_DW_ROW(3, a30, a31)
      KERAS_DW_ROW(4, a40, a41)
      KERAS_DW_ROW(5, a50, a51)
#undef KERAS_DW_ROW
    }
  }
  float* out = g.dk + (t.tap * g.cg + t.c0) * g.o + t.o0;
  const __m256 rows[6][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}, {a40, a41}, {a50, a51}};
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) add_to(out + r * g.o + 8 * v, rows[r][v]);
}

template <int V>
__attribute__((target("avx2,fma"))) void bias_tile(const Geometry& g, const Tile& t, int64_t n, int64_t oy_begin,
                                                   int64_t oy_end) {
  __m256 acc[V];
  for (int v = 0; v < V; ++v) acc[v] = _mm256_setzero_ps();
  const float* dp = g.dy + (n * g.oh + oy_begin) * g.ow * g.o + t.o0;
  for (int64_t i = 0, pixels = (oy_end - oy_begin) * g.ow; i < pixels; ++i, dp += g.o)
    for (int v = 0; v < V; ++v) acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(dp + 8 * v));
  for (int v = 0; v < V; ++v) {
    float* q = g.db + t.o0 + 8 * v;
    _mm256_storeu_ps(q, _mm256_add_ps(_mm256_loadu_ps(q), acc[v]));
  }
}

using TileFn = void (*)(const Geometry&, const Tile&, int64_t, int64_t, int64_t);

template <int V>
TileFn weight_tile_for(int rows) {
  switch (rows) {
    case 1: return weight_tile<1, V>;
    case 2: return weight_tile<2, V>;
    case 3: return weight_tile<3, V>;
    case 4: return weight_tile<4, V>;
    case 5: return weight_tile<5, V>;
    default: return weight_tile<6, V>;
  }
}

TileFn tile_fn(const Tile& t) {
  if (t.rows == 0) return t.vecs == 2 ? bias_tile<2> : bias_tile<1>;
  return t.vecs == 2 ? weight_tile_for<2>(t.rows) : weight_tile_for<1>(t.rows);
}

std::vector<Tile> make_tiles(const Geometry& g, bool with_bias) {
  std::vector<Tile> tiles;
  int64_t groups = g.p.groups;
  for (int64_t grp = 0; grp < groups; ++grp)
    for (int64_t o0 = grp * g.og; o0 < (grp + 1) * g.og; o0 += 16) {
      int vecs = (grp + 1) * g.og - o0 >= 16 ? 2 : 1;
      for (int64_t tap = 0; tap < g.kh * g.kw; ++tap)
        for (int64_t c0 = 0; c0 < g.cg; c0 += 6)
          tiles.push_back({tap, c0, grp * g.cg + c0, o0, static_cast<int>(std::min<int64_t>(6, g.cg - c0)), vecs});
      if (with_bias) tiles.push_back({0, 0, 0, o0, 0, vecs});
    }
  return tiles;
}

// Tiles per thread, longest first to the least loaded thread; cost ~ (broadcasts + loads) * pixels.
std::vector<std::vector<Tile>> assign(std::vector<Tile> tiles, int threads) {
  auto cost = [](const Tile& t) { return (t.rows + 1) * t.vecs; };
  std::stable_sort(tiles.begin(), tiles.end(), [&](const Tile& a, const Tile& b) { return cost(a) > cost(b); });
  std::vector<std::vector<Tile>> per_thread(static_cast<size_t>(threads));
  std::vector<int64_t> load(static_cast<size_t>(threads), 0);
  for (const Tile& t : tiles) {
    size_t least = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    per_thread[least].push_back(t);
    load[least] += cost(t);
  }
  return per_thread;
}

}  // namespace

bool conv2d_backward_weights_direct_supported(const Shape& kernel_shape, const ConvParams& params) {
  return conv_direct_available() && kernel_shape.size() == 4 && params.groups > 0 &&
         kernel_shape[3] % params.groups == 0 && (kernel_shape[3] / params.groups) % 8 == 0 &&
         kernel_shape[2] <= kDirectMaxChannels && kernel_shape[3] / params.groups <= kDirectMaxChannels;
}

void conv2d_backward_weights_direct(const float* x, const Shape& xs, const float* dy, const Shape& ys, float* dk,
                                    const Shape& ks, float* db, const ConvParams& p) {
  if (avx512::conv_backward_weights_supports(ks, p)) return avx512::conv_backward_weights(x, xs, dy, ys, dk, ks, db, p);
  Geometry g{x, dy, dk, db, xs[0], xs[1], xs[2], xs[3], ys[1], ys[2], ys[3], ks[0], ks[1], ks[2], ks[3] / p.groups, p};
  std::memset(dk, 0, static_cast<size_t>(shape_numel(ks)) * sizeof(float));
  if (db) std::memset(db, 0, static_cast<size_t>(g.o) * sizeof(float));
  // A band of output rows whose dy and x rows take about 128 KB stays in L2 (512 KB per core
  // here) while all of the thread's tiles stream through it; smaller bands measured slower.
  const int64_t kBandBytes = 128 << 10;
  int64_t row_bytes = (g.ow * g.o + p.stride_h * g.w * g.c) * static_cast<int64_t>(sizeof(float));
  int64_t band = std::clamp<int64_t>(kBandBytes / std::max<int64_t>(row_bytes, 1), 1, std::max<int64_t>(g.oh, 1));
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  auto per_thread = assign(make_tiles(g, db != nullptr), threads);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    // The runtime may grant fewer threads than asked: then a thread takes several lists.
    std::vector<Tile> mine;
    for (size_t i = static_cast<size_t>(omp_get_thread_num()); i < per_thread.size();
         i += static_cast<size_t>(omp_get_num_threads()))
      mine.insert(mine.end(), per_thread[i].begin(), per_thread[i].end());
    std::vector<TileFn> fns;
    for (const Tile& t : mine) fns.push_back(tile_fn(t));
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t oy = 0; oy < g.oh; oy += band)
        for (size_t i = 0; i < mine.size(); ++i) fns[i](g, mine[i], n, oy, std::min(oy + band, g.oh));
  }
}

}  // namespace keras::cpu
