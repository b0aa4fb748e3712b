// The direct convolution in AVX-512 (see conv_direct_avx512.h).
//
// A tile is R neighbouring output pixels of one row times V vectors of 16 outputs (R * V <= 24
// accumulators). Each thread first copies the input rows its output rows read into a small ring
// of zero-padded rows, so every tap of every pixel is in range: a tile's pixels then sit at
// compile-time offsets (r * CI floats) from one pointer, where per-pixel pointers would not fit
// the 16 general registers. Rows outside the image are skipped, as the AVX2 kernel skips them,
// and the padding columns are multiplied in as zeros, as its zero row is: tap-by-tap tiles give
// each output element the same fused multiply-adds in the same order (taps, then channels), so
// the bits match; three-tap tiles (below) sum in another order.
#include "backend/cpu/conv_direct_avx512.h"
#include "backend/cpu/cpu_isa.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

namespace keras::cpu::avx512 {
namespace {

std::atomic<bool> enabled{true};

// Accumulators per tile; with V weight vectors and a broadcast they fit AVX-512's 32 registers.
constexpr int kMaxAccumulators = 24;
constexpr int max_pixels(int v) { return kMaxAccumulators / v; }

// The input rows one thread's output rows read, each with zero columns around it: slot s holds
// image row `held[s]` (n * ih + iy). A window of (kh - 1) * dh + 1 consecutive rows maps to
// distinct slots, so the rows one output row needs are all present at once (with stride 2 the
// next output row's window starts two rows on).
struct PaddedRows {
  float* data;     // slots x width x ci floats, zero where no row is copied
  int64_t* held;   // slots entries, -1 for none
  int64_t slots, width;

  static int64_t slots_of(const DirectConv& g) { return (g.kh - 1) * g.dh + 1; }
  // Pixels a padded row holds: every tap of every output pixel reads inside it.
  static int64_t width_of(const DirectConv& g) {
    return std::max(g.iw + g.pl, (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1);
  }

  // The padded copy of image row `key`; pixel ix of the image is at pixel ix + pl of the copy.
  const float* row(const DirectConv& g, int64_t key) {
    int64_t s = key % slots;
    float* dst = data + s * width * g.ci;
    if (held[s] != key) {
      std::memcpy(dst + g.pl * g.ci, g.in + key * g.iw * g.ci, static_cast<size_t>(g.iw * g.ci) * sizeof(float));
      held[s] = key;
    }
    return dst;
  }
};

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

// How a tile walks the kernel: tap by tap (stride 1 or 2), or three taps at once (below).
enum class Walk { taps, taps_stride2, three_taps };

// rows[kh]: the padded row tap row kh reads, or null outside the image. ox0: the tile's first
// output pixel (its input pixel is ox0 * stride in padded coordinates). o0: the first output channel.
// Three taps (Walk::three_taps, stride 1): a 3-wide undilated kernel row, whose taps read overlapping pixels, runs with
// the input pixel outermost: each broadcast feeds the up to three outputs it touches, one load
// for up to 3 * V fused multiply-adds (the tap-by-tap loop pays one load for V, and at V = 1
// reached only ~70% of the FMA rate here, as the loads saturate). The sums then run per tap row
// over channels, then the three taps, where the tap-by-tap loop takes taps, then channels.
template <int R, int V, int CI, Walk W>
void output_tile(const DirectConv& g, const float* const* rows, int64_t ox0, int64_t o0, float* out) {
  constexpr int S = W == Walk::taps_stride2 ? 2 : 1;
  __m512 acc[R][V];
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  const int64_t co = g.co;
  for (int64_t kh = 0; kh < g.kh; ++kh) {
    const float* row = rows[kh];
    if (!row) continue;
    if constexpr (W == Walk::three_taps) {
      const float* p = row + ox0 * CI;
      const float* wp = g.w + kh * 3 * CI * co + o0;
      for (int c = 0; c < CI; ++c, ++p, wp += co) {
        __m512 w[3][V];
#pragma GCC unroll 3
        for (int kw = 0; kw < 3; ++kw)
#pragma GCC unroll 4
          for (int v = 0; v < V; ++v) w[kw][v] = _mm512_loadu_ps(wp + kw * CI * co + 16 * v);
#pragma GCC unroll 32
        for (int j = 0; j < R + 2; ++j) {
          const __m512 b = _mm512_set1_ps(p[j * CI]);
#pragma GCC unroll 3
          for (int kw = 0; kw < 3; ++kw)
            if (j - kw >= 0 && j - kw < R)
#pragma GCC unroll 4
              for (int v = 0; v < V; ++v) acc[j - kw][v] = _mm512_fmadd_ps(b, w[kw][v], acc[j - kw][v]);
        }
      }
    } else {
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const float* p = row + (ox0 * S + kw * g.dw) * CI;
        const float* wp = g.w + (kh * g.kw + kw) * CI * co + o0;
        for (int c = 0; c < CI; ++c, ++p, wp += co) {
          __m512 w[V];
#pragma GCC unroll 4
          for (int v = 0; v < V; ++v) w[v] = _mm512_loadu_ps(wp + 16 * v);
#pragma GCC unroll 32
          for (int r = 0; r < R; ++r) {
            const __m512 b = _mm512_set1_ps(p[r * S * CI]);
#pragma GCC unroll 4
            for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(b, w[v], acc[r][v]);
          }
        }
      }
    }
  }
  __m512 bias[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) bias[v] = g.bias ? _mm512_loadu_ps(g.bias + o0 + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      __m512 value = _mm512_add_ps(acc[r][v], bias[v]);
      if (g.relu)  // max(x, 0) gives 0 for NaN; relu keeps NaN
        value = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q),
                                     _mm512_max_ps(value, _mm512_setzero_ps()), value);
      _mm512_storeu_ps(out + r * co + 16 * v, value);
    }
}

using TileFn = void (*)(const DirectConv&, const float* const*, int64_t, int64_t, float*);

template <int V, int CI, Walk W, size_t... R>
TileFn tile_for(int pixels, std::index_sequence<R...>) {
  static constexpr TileFn table[] = {output_tile<static_cast<int>(R) + 1, V, CI, W>...};
  return table[pixels - 1];
}

template <int CI, Walk W>
TileFn tile_for(int v, int pixels) {
  return v == 1 ? tile_for<1, CI, W>(pixels, std::make_index_sequence<max_pixels(1)>())
                : tile_for<2, CI, W>(pixels, std::make_index_sequence<max_pixels(2)>());
}

template <Walk W>
TileFn tile_for(int64_t ci, int v, int pixels) {
  switch (ci) {
    case 16: return tile_for<16, W>(v, pixels);
    case 32: return tile_for<32, W>(v, pixels);
    default: return tile_for<64, W>(v, pixels);
  }
}

TileFn tile_for(const DirectConv& g, int v, int pixels) {
  if (g.sw == 2) return tile_for<Walk::taps_stride2>(g.ci, v, pixels);
  return g.kw == 3 && g.dw == 1 ? tile_for<Walk::three_taps>(g.ci, v, pixels) : tile_for<Walk::taps>(g.ci, v, pixels);
}

#pragma GCC pop_options

}  // namespace

bool conv_direct_supports(int64_t ci, int64_t co, int64_t stride_h, int64_t stride_w, int64_t pad_left) {
  return isa_allows_avx512() && enabled.load() && (stride_h == 1 || stride_h == 2) && (stride_w == 1 || stride_w == 2) &&
         pad_left >= 0 && (ci == 16 || ci == 32 || ci == 64) && co % 16 == 0 && co <= 64 && co > 0;
}

bool conv_direct_supports(const DirectConv& g) { return conv_direct_supports(g.ci, g.co, g.sh, g.sw, g.pl); }

// An output row's tiles for one block of V vectors: near-equal widths of at most max_pixels(V)
// (ow = 32 with one vector runs two tiles of 16, not 24 + 8).
struct RowTiles {
  int64_t o0 = 0, count = 0, base = 0, longer = 0;
  TileFn short_tile = nullptr, long_tile = nullptr;
};

RowTiles row_tiles(const DirectConv& g, int64_t o0, int v) {
  RowTiles t{o0, (g.ow + max_pixels(v) - 1) / max_pixels(v)};
  t.base = g.ow / t.count, t.longer = g.ow % t.count;
  t.short_tile = tile_for(g, v, static_cast<int>(t.base));
  t.long_tile = t.longer ? tile_for(g, v, static_cast<int>(t.base + 1)) : t.short_tile;
  return t;
}

void conv_direct(const DirectConv& g) {
  if (g.n * g.oh == 0 || g.ow == 0) return;
  // Outputs in blocks of two vectors (one for an odd last vector): with four, the weights a tile
  // streams per channel outgrow the L1 cache at 64 channels.
  std::vector<RowTiles> blocks;
  for (int64_t o0 = 0; o0 < g.co; o0 += 32) blocks.push_back(row_tiles(g, o0, g.co - o0 >= 32 ? 2 : 1));
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // Each thread's padded rows, allocated here (not inside the parallel region, where a failed
  // allocation could not be thrown to the caller). A thread's part is padded by a cache line on
  // each side: the threads rewrite their row keys and pointers for every output row, and sharing
  // a line made the 16-channel forward 35% slower.
  auto padded_count = [](int64_t n, int64_t per_line) { return (n + per_line - 1) / per_line * per_line + per_line; };
  const int64_t slots = PaddedRows::slots_of(g), width = PaddedRows::width_of(g);
  const int64_t floats = padded_count(slots * width * g.ci, 16), keys_each = padded_count(slots, 8),
                rows_each = padded_count(g.kh, 8);
  thread_local std::vector<float> row_data;
  thread_local std::vector<int64_t> row_keys;
  thread_local std::vector<const float*> tap_rows;
  row_data.assign(static_cast<size_t>(threads * floats), 0.f);
  row_keys.assign(static_cast<size_t>(threads * keys_each), -1);
  tap_rows.assign(static_cast<size_t>(threads * rows_each), nullptr);
  float* const data = row_data.data();
  int64_t* const keys = row_keys.data();
  const float** const all_rows = tap_rows.data();
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int me = omp_get_thread_num();
    PaddedRows padded{data + me * floats, keys + me * keys_each, slots, width};
    const float** rows = all_rows + me * rows_each;  // the padded row each kernel row reads, or null
#pragma omp for schedule(static)
    for (int64_t out_row = 0; out_row < g.n * g.oh; ++out_row) {
      int64_t n = out_row / g.oh, oy = out_row % g.oh;
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        int64_t iy = oy * g.sh + kh * g.dh - g.pt;
        rows[kh] = iy < 0 || iy >= g.ih ? nullptr : padded.row(g, n * g.ih + iy);
      }
      float* out = g.out + out_row * g.ow * g.co;
      for (const RowTiles& b : blocks)
        for (int64_t t = 0, ox = 0; t < b.count; ++t) {
          int64_t pixels = t < b.longer ? b.base + 1 : b.base;
          (t < b.longer ? b.long_tile : b.short_tile)(g, rows, ox, b.o0, out + ox * g.co + b.o0);
          ox += pixels;
        }
    }
  }
}

void set_conv_direct_enabled(bool on) { enabled.store(on); }
bool conv_direct_enabled() { return enabled.load(); }

}  // namespace keras::cpu::avx512
