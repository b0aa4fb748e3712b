// The AVX-512 weight gradient for 3-wide kernels (see conv_backward_weights_avx512.h).
//
// A tile is one kernel row kh, up to 8 input channels c (broadcast scalars) and one vector of 16
// outputs o, for all three taps: 24 accumulators. Walking an input row, pixel j of the padded
// row is broadcast once per channel and multiplied with dy of pixels j, j - 1 and j - 2 (taps 0,
// 1 and 2), a sliding window of dy vectors in registers; at the row's ends the padding and the
// taps whose dy pixel does not exist are skipped (never multiplied by zeros: 0 * inf is NaN).
// (Two output vectors per tile, with 4 channels, measured slower: 24 accumulators, 6 dy vectors
// and a broadcast leave the compiler one register short.) Rows are visited in bands whose x and
// dy stay in L2, and the images in chunks summed apart and added in chunk order: how the work is
// shared between threads never changes which sums are formed, so the bits do not depend on the
// thread count.
#include "backend/cpu/conv_backward_weights_avx512.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/conv_direct_avx512.h"
#include "backend/cpu/cpu_isa.h"

namespace keras::cpu::avx512 {
namespace {

struct Problem {
  const float* x;
  const float* dy;
  float* dk;  // where the tiles add their sums: dk itself, or one chunk's partial sums
  float* db;
  int64_t n, ih, iw, ci;  // x
  int64_t oh, ow, co;     // dy
  int64_t kh, dh, pt, pl;
};

struct Tile {
  int64_t kh = 0, c0 = 0, o0 = 0;
  int channels = 0;  // 0: a bias tile
};

constexpr int kMaxChannels = 8;  // per tile: 3 taps x 8 accumulators, 3 dy vectors, a broadcast

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

// Pixel j of an input row: each of its R channels times dy of pixels j (tap 0), j - 1 (tap 1)
// and j - 2 (tap 2), for the taps whose dy pixel exists (T0..T2).
template <int R, bool T0, bool T1, bool T2>
inline void input_pixel(__m512 (&acc)[3][R], const float* xp, __m512 d0, __m512 d1, __m512 d2) {
#pragma GCC unroll 8
  for (int c = 0; c < R; ++c) {
    const __m512 b = _mm512_set1_ps(xp[c]);
    if constexpr (T0) acc[0][c] = _mm512_fmadd_ps(b, d0, acc[0][c]);
    if constexpr (T1) acc[1][c] = _mm512_fmadd_ps(b, d1, acc[1][c]);
    if constexpr (T2) acc[2][c] = _mm512_fmadd_ps(b, d2, acc[2][c]);
  }
}

// Rows [r0, r1) of the batch (row r: image r / oh, output row r % oh).
template <int R>
void weight_tile(const Problem& g, const Tile& t, int64_t r0, int64_t r1) {
  __m512 acc[3][R];
#pragma GCC unroll 3
  for (int k = 0; k < 3; ++k)
#pragma GCC unroll 8
    for (int c = 0; c < R; ++c) acc[k][c] = _mm512_setzero_ps();
  const int64_t ow = g.ow, ci = g.ci, co = g.co;
  // The middle of a padded row, [lo, hi): every tap's dy pixel and the input pixel exist.
  const int64_t lo = std::min(std::max<int64_t>(2, g.pl), ow + 2), hi = std::max(lo, std::min(ow, g.iw + g.pl));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / g.oh, iy = r % g.oh + t.kh * g.dh - g.pt;
    if (iy < 0 || iy >= g.ih) continue;
    const float* xr = g.x + (n * g.ih + iy) * g.iw * ci + t.c0;  // input pixel ix at xr + ix * ci
    const float* xm = xr - g.pl * ci;                             // padded pixel j at xm + j * ci
    const float* dr = g.dy + r * ow * co + t.o0;
    __m512 d0 = _mm512_setzero_ps(), d1 = d0, d2 = d0;  // dy of pixels j, j - 1, j - 2
    auto shift_in = [&](int64_t j) {
      d2 = d1, d1 = d0;
      d0 = j < ow ? _mm512_loadu_ps(dr + j * co) : _mm512_setzero_ps();
    };
    auto end_pixel = [&](int64_t j) {
      shift_in(j);
      const int64_t ix = j - g.pl;
      if (ix < 0 || ix >= g.iw) return;  // padding adds nothing
      const float* xp = xr + ix * ci;
      switch (int(j < ow) | int(j >= 1 && j - 1 < ow) << 1 | int(j >= 2 && j - 2 < ow) << 2) {
        case 1: return input_pixel<R, true, false, false>(acc, xp, d0, d1, d2);
        case 2: return input_pixel<R, false, true, false>(acc, xp, d0, d1, d2);
        case 3: return input_pixel<R, true, true, false>(acc, xp, d0, d1, d2);
        case 4: return input_pixel<R, false, false, true>(acc, xp, d0, d1, d2);
        case 6: return input_pixel<R, false, true, true>(acc, xp, d0, d1, d2);
        case 7: return input_pixel<R, true, true, true>(acc, xp, d0, d1, d2);
        default: return;  // 5 cannot happen: j - 1 lies between j and j - 2
      }
    };
    int64_t j = 0;
    for (; j < lo; ++j) end_pixel(j);
    // Three pixels a step, the window's registers changing roles instead of being moved (d0
    // holds dy of pixel j - 1 and d1 of j - 2 on entry and exit): zmm moves take FMA ports.
    for (; j + 3 <= hi; j += 3) {
      d2 = _mm512_loadu_ps(dr + j * co);
      input_pixel<R, true, true, true>(acc, xm + j * ci, d2, d0, d1);
      d1 = _mm512_loadu_ps(dr + (j + 1) * co);
      input_pixel<R, true, true, true>(acc, xm + (j + 1) * ci, d1, d2, d0);
      d0 = _mm512_loadu_ps(dr + (j + 2) * co);
      input_pixel<R, true, true, true>(acc, xm + (j + 2) * ci, d0, d1, d2);
    }
    for (; j < hi; ++j) {
      shift_in(j);
      input_pixel<R, true, true, true>(acc, xm + j * ci, d0, d1, d2);
    }
    for (; j < ow + 2; ++j) end_pixel(j);
  }
#pragma GCC unroll 3
  for (int k = 0; k < 3; ++k)
#pragma GCC unroll 8
    for (int c = 0; c < R; ++c) {
      float* q = g.dk + ((t.kh * 3 + k) * ci + t.c0 + c) * co + t.o0;
      _mm512_storeu_ps(q, _mm512_add_ps(_mm512_loadu_ps(q), acc[k][c]));
    }
}

void bias_tile(const Problem& g, const Tile& t, int64_t r0, int64_t r1) {
  __m512 acc = _mm512_setzero_ps();
  const float* dp = g.dy + r0 * g.ow * g.co + t.o0;
  for (int64_t i = 0, pixels = (r1 - r0) * g.ow; i < pixels; ++i, dp += g.co)
    acc = _mm512_add_ps(acc, _mm512_loadu_ps(dp));
  float* q = g.db + t.o0;
  _mm512_storeu_ps(q, _mm512_add_ps(_mm512_loadu_ps(q), acc));
}

using TileFn = void (*)(const Problem&, const Tile&, int64_t, int64_t);

TileFn tile_fn(const Tile& t) {
  static constexpr TileFn by_channels[] = {bias_tile,      weight_tile<1>, weight_tile<2>, weight_tile<3>, weight_tile<4>,
                                           weight_tile<5>, weight_tile<6>, weight_tile<7>, weight_tile<8>};
  return by_channels[t.channels];
}

#pragma GCC pop_options

// Per output vector: each kernel row's channels in near-equal blocks of at most kMaxChannels,
// then the bias.
std::vector<Tile> make_tiles(const Problem& g) {
  std::vector<Tile> tiles;
  const int64_t blocks = (g.ci + kMaxChannels - 1) / kMaxChannels;
  for (int64_t o0 = 0; o0 < g.co; o0 += 16) {
    for (int64_t kh = 0; kh < g.kh; ++kh)
      for (int64_t b = 0, c0 = 0; b < blocks; ++b) {
        const int64_t channels = g.ci / blocks + (b < g.ci % blocks ? 1 : 0);
        tiles.push_back({kh, c0, o0, static_cast<int>(channels)});
        c0 += channels;
      }
    if (g.db) tiles.push_back({0, 0, o0, 0});
  }
  return tiles;
}

}  // namespace

bool conv_backward_weights_supports(const Shape& ks, const ConvParams& p) {
  return isa_allows_avx512() && conv_direct_enabled() && ks.size() == 4 && p.groups == 1 && p.stride_h == 1 && p.stride_w == 1 &&
         ks[1] == 3 && p.dilation_w == 1 && ks[2] >= 1 && ks[2] <= 64 && ks[3] % 16 == 0 && ks[3] > 0 && ks[3] <= 64;
}

void conv_backward_weights(const float* x, const Shape& xs, const float* dy, const Shape& ys, float* dk,
                           const Shape& ks, float* db, const ConvParams& p) {
  const Problem whole{x, dy, dk, db, xs[0], xs[1], xs[2], xs[3], ys[1], ys[2], ys[3], ks[0], p.dilation_h, p.pad_top,
                      p.pad_left};
  const int64_t dk_size = shape_numel(ks), co = whole.co, rows = whole.n * whole.oh;
  std::memset(dk, 0, static_cast<size_t>(dk_size) * sizeof(float));
  if (db) std::memset(db, 0, static_cast<size_t>(co) * sizeof(float));
  if (rows == 0 || whole.ow == 0) return;
  // The batch's rows are summed in `chunks` runs, each into its own partial dk and db, added in
  // chunk order at the end: the threads share the pixels (none streams all of x and dy), and
  // the count depends on the shapes alone. The partial sums, at most a quarter of x and dy
  // (and 16 runs), cost one pass.
  const int64_t part_size = dk_size + co;
  const int64_t data_floats = whole.n * whole.ih * whole.iw * whole.ci + rows * whole.ow * co;
  const int64_t chunks = std::clamp<int64_t>(data_floats / 4 / part_size, 1, std::min<int64_t>(16, rows));
  thread_local std::vector<float> partials;
  if (chunks > 1) partials.assign(static_cast<size_t>(chunks * part_size), 0.f);
  float* const part = partials.data();  // the caller's buffer, shared by the team through this pointer
  // Bands of rows (across images) whose dy and input rows take about 128 KB, so that they stay
  // in L2 while all of the thread's tiles stream through them, and dk is updated once a band.
  const int64_t kBandBytes = 128 << 10;
  const int64_t row_bytes = (whole.ow * co + whole.iw * whole.ci) * static_cast<int64_t>(sizeof(float));
  const int64_t band = std::max<int64_t>(kBandBytes / row_bytes, 1);
  const std::vector<Tile> tiles = make_tiles(whole);
  const int64_t n_tiles = static_cast<int64_t>(tiles.size()), items = chunks * n_tiles;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    // Work items (chunk, tile) in chunk-major order, a contiguous range per thread: a thread
    // visits few chunks and runs all of its tiles there band by band.
    const int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t first = items * me / team, last = items * (me + 1) / team;
    for (int64_t chunk = first / n_tiles; chunk * n_tiles < last; ++chunk) {
      const int64_t t0 = std::max(first, chunk * n_tiles) - chunk * n_tiles;
      const int64_t t1 = std::min(last, (chunk + 1) * n_tiles) - chunk * n_tiles;
      Problem g = whole;
      if (chunks > 1) {
        g.dk = part + chunk * part_size;
        g.db = db ? g.dk + dk_size : nullptr;
      }
      for (int64_t r = rows * chunk / chunks, end = rows * (chunk + 1) / chunks; r < end; r += band)
        for (int64_t t = t0; t < t1; ++t)
          tile_fn(tiles[static_cast<size_t>(t)])(g, tiles[static_cast<size_t>(t)], r, std::min(r + band, end));
    }
    if (chunks > 1) {
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t e = 0; e < part_size; ++e) {
        float sum = 0.f;
        for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += part[chunk * part_size + e];
        if (e < dk_size) dk[e] = sum;
        else if (db) db[e - dk_size] = sum;
      }
    }
  }
}

}  // namespace keras::cpu::avx512
