// The bfloat16 weight gradient from AVX512-BF16 dot products (see conv_backward_weights_bf16.h).
//
// A tile is one kernel row kh, up to CIB input channels and all COB vectors of 16 outputs, for
// the three taps: 3 x CIB x COB float32 accumulators, loaded from and stored back to the chunk's
// partial sums once per group of images packed together. Each step of an output row takes one pixel pair: COB dy vectors,
// and per tap and channel one broadcast x pair for COB dot products.
#include "backend/cpu/conv_backward_weights_bf16.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "backend/cpu/bf16_convert.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/half.h"

namespace keras::cpu {
namespace {

constexpr int64_t kMaxChunks = 8;
constexpr int64_t kPairOffset = 1;             // packed pair q sits at index q + 1 (q >= -1)
constexpr std::array<int, 4> kMaxCib = {8, 4, 3, 2};  // per COB: at most 31 vector registers

struct Geometry {
  int64_t ih, iw, ci, oh, co, kh, pt, sh, sw;
  int64_t pairs;      // output pixel pairs per row
  int64_t q;          // packed x pairs per row
  int64_t shift[3];   // per tap: index of output pair 0's x pair in its packing
  int packing[3];     // per tap: its packing, the residue of its pairs' left columns modulo 2 sw
  bool used[4];       // the packings some tap reads
};

// One image packed: dy as [oh][pair][co] and x as [ih][q][ci], each entry two bfloat16 (the
// earlier pixel in the low half, as VDPBF16PS pairs them). x's packing j pairs columns sw apart,
// entry i's left column 2 sw (i - kPairOffset) + j: stride 1 needs the two parities, stride 2
// one packing per tap.
struct Packed {
  std::vector<uint32_t> dy, x[4];
};

// o[c] = (a[c], b[c]) as one pair, a null row giving zeros. Inlined into pack_image, whose target
// it then vectorises for (a call per packed pixel cost a fifth of a 16-channel gradient).
[[gnu::always_inline]] inline void interleave(uint32_t* o, const uint16_t* a, const uint16_t* b, int64_t n) {
  if (a && b) {
    for (int64_t c = 0; c < n; ++c) o[c] = a[c] | (static_cast<uint32_t>(b[c]) << 16);
  } else if (a) {
    for (int64_t c = 0; c < n; ++c) o[c] = a[c];
  } else if (b) {
    for (int64_t c = 0; c < n; ++c) o[c] = static_cast<uint32_t>(b[c]) << 16;
  } else {
    std::fill(o, o + n, 0u);
  }
}

__attribute__((target("avx512f,avx512bw"))) void pack_image(const Geometry& g, const uint16_t* x, const uint16_t* dy,
                                                              Packed& out) {
  out.dy.resize(static_cast<size_t>(g.oh * g.pairs * g.co));
  for (int64_t r = 0; r < g.oh; ++r)
    for (int64_t p = 0; p < g.pairs; ++p) {
      const uint16_t* a = dy + (r * g.pairs * 2 + 2 * p) * g.co;
      interleave(out.dy.data() + (r * g.pairs + p) * g.co, a, a + g.co, g.co);
    }
  for (int j = 0; j < 2 * g.sw; ++j) {
    if (!g.used[j]) continue;
    std::vector<uint32_t>& packed = out.x[j];
    packed.resize(static_cast<size_t>(g.ih * g.q * g.ci));
    for (int64_t r = 0; r < g.ih; ++r)
      for (int64_t i = 0; i < g.q; ++i) {
        const int64_t left = 2 * g.sw * (i - kPairOffset) + j;
        auto column = [&](int64_t col) { return col >= 0 && col < g.iw ? x + (r * g.iw + col) * g.ci : nullptr; };
        interleave(packed.data() + (r * g.q + i) * g.ci, column(left), column(left + g.sw), g.ci);
      }
  }
}

template <int COB, int CIB>
__attribute__((target("avx512f,avx512bf16"))) void accumulate(const Geometry& g, const Packed* images, int64_t count,
                                                                 int64_t kh, int64_t c0, float* part) {
  __m512 acc[3][CIB][COB];
  auto at = [&](int kw, int c, int b) { return part + ((kh * 3 + kw) * g.ci + c0 + c) * g.co + b * 16; };
  for (int kw = 0; kw < 3; ++kw)
    for (int c = 0; c < CIB; ++c)
      for (int b = 0; b < COB; ++b) acc[kw][c][b] = _mm512_loadu_ps(at(kw, c, b));
  // Output rows whose input row r sh + kh - pt lies in the image.
  const int64_t top = g.pt - kh, bottom = g.ih - 1 + g.pt - kh;
  const int64_t first = top > 0 ? (top + g.sh - 1) / g.sh : 0;
  const int64_t last = bottom < 0 ? 0 : std::min(g.oh, bottom / g.sh + 1);
  for (const Packed* im = images; im < images + count; ++im)
  for (int64_t r = first; r < last; ++r) {
    const int64_t ir = r * g.sh + kh - g.pt;
    const uint32_t* d = im->dy.data() + r * g.pairs * g.co;
    const uint32_t* xs[3];
    for (int kw = 0; kw < 3; ++kw) xs[kw] = im->x[g.packing[kw]].data() + (ir * g.q + g.shift[kw]) * g.ci + c0;
    for (int64_t p = 0; p < g.pairs; ++p) {
      __m512i dv[COB];
      for (int b = 0; b < COB; ++b) dv[b] = _mm512_loadu_si512(d + p * g.co + b * 16);
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw)
#pragma GCC unroll 8
        for (int c = 0; c < CIB; ++c) {
          const __m512i a = _mm512_set1_epi32(static_cast<int>(xs[kw][p * g.ci + c]));
          for (int b = 0; b < COB; ++b) acc[kw][c][b] = _mm512_dpbf16_ps(acc[kw][c][b], (__m512bh)a, (__m512bh)dv[b]);
        }
    }
  }
  for (int kw = 0; kw < 3; ++kw)
    for (int c = 0; c < CIB; ++c)
      for (int b = 0; b < COB; ++b) _mm512_storeu_ps(at(kw, c, b), acc[kw][c][b]);
}

// sums[o] += dy[p, o] over `pixels` pixels, in pixel order.
__attribute__((target("avx512f,avx512bw"))) void add_pixels(const uint16_t* dy, int64_t pixels, int64_t co,
                                                              float* sums) {
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t o = 0; o < co; ++o) sums[o] += bfloat16_to_float(dy[p * co + o]);
}

using AccumulateFn = void (*)(const Geometry&, const Packed*, int64_t, int64_t, int64_t, float*);

template <int COB, int... C>
constexpr std::array<AccumulateFn, 8> row_of(std::integer_sequence<int, C...>) {
  return {accumulate<COB, C + 1>...};
}
// [COB - 1][CIB - 1]; entries past kMaxCib[COB - 1] are never called.
const std::array<std::array<AccumulateFn, 8>, 4> kAccumulate = {
    row_of<1>(std::make_integer_sequence<int, 8>()), row_of<2>(std::make_integer_sequence<int, 8>()),
    row_of<3>(std::make_integer_sequence<int, 8>()), row_of<4>(std::make_integer_sequence<int, 8>())};

}  // namespace

bool conv2d_backward_weights_bf16_supported(const Shape& x_shape, const Shape& kernel_shape, const Shape& dy_shape,
                                            const ConvParams& p) {
  if (!isa_allows_bf16() || !conv_direct_available()) return false;
  if (x_shape.size() != 4 || kernel_shape.size() != 4 || dy_shape.size() != 4) return false;
  const int64_t co = kernel_shape[3];
  if (x_shape[0] < 1 || dy_shape[1] < 1 || x_shape[3] != kernel_shape[2] || dy_shape[3] != co) return false;
  return (p.stride_h == 1 || p.stride_h == 2) && (p.stride_w == 1 || p.stride_w == 2) && p.dilation_h == 1 &&
         p.dilation_w == 1 && p.groups == 1 &&
         kernel_shape[1] == 3 && p.pad_left >= 0 && p.pad_left <= 2 && p.pad_top >= 0 && dy_shape[2] % 2 == 0 &&
         dy_shape[2] > 0 && co % 16 == 0 && co >= 16 && co <= 64 && kernel_shape[2] >= 1;
}

void conv2d_backward_weights_bf16(const uint16_t* x, const Shape& xs, const uint16_t* dy, const Shape& ys,
                                  uint16_t* dk, const Shape& ks, uint16_t* db, const ConvParams& params) {
  Geometry g{};
  g.ih = xs[1], g.iw = xs[2], g.ci = xs[3], g.oh = ys[1], g.co = ys[3], g.kh = ks[0];
  g.pt = params.pad_top, g.sh = params.stride_h, g.sw = params.stride_w;
  g.pairs = ys[2] / 2;
  g.q = g.pairs + 2;
  for (int kw = 0; kw < 3; ++kw) {
    // Output pair p's tap kw reads columns 2 sw p + s and that + sw, s = kw - pad_left >= -2: with
    // s = 2 sw m + j (0 <= j < 2 sw, m >= -1), packing j's entry p + m + kPairOffset.
    const int64_t s = kw - params.pad_left, period = 2 * g.sw, j = (s % period + period) % period;
    g.packing[kw] = static_cast<int>(j);
    g.shift[kw] = kPairOffset + (s - j) / period;
    g.used[j] = true;
  }
  const int64_t packings = std::count(std::begin(g.used), std::end(g.used), true);
  // A chunk's row of partial sums: the kernel's, then the bias's.
  const int64_t n = xs[0], chunks = std::min(n, kMaxChunks), weights = g.kh * 3 * g.ci * g.co;
  const int64_t size = weights + (db ? g.co : 0);
  const int cob = static_cast<int>(g.co / 16), max_cib = kMaxCib[static_cast<size_t>(cob - 1)];
  Tensor partial_sums = Tensor::empty({chunks, size}, DType::float32);
  float* partial = partial_sums.data<float>();
  const int64_t x_image = g.ih * g.iw * g.ci, dy_image = g.oh * g.pairs * 2 * g.co;
  // Images packed and summed together, their packings within ~256 KB (L2): a tile then loads and
  // stores its accumulators once for them all (small images give a tile few pixel pairs each).
  const int64_t packed_bytes = 4 * (g.oh * g.pairs * g.co + packings * g.ih * g.q * g.ci);
  const int64_t group = std::clamp<int64_t>((int64_t{256} << 10) / packed_bytes, 1, 8);
#pragma omp parallel
  {
    thread_local std::vector<Packed> packed;  // kept between calls: no allocation per step
    if (packed.size() < static_cast<size_t>(group)) packed.resize(static_cast<size_t>(group));
    // Chunk c: images [n c / chunks, n (c + 1) / chunks), its sums in partial row c.
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      float* part = partial + c * size;
      std::fill(part, part + size, 0.0f);
      const int64_t end = n * (c + 1) / chunks;
      for (int64_t i = n * c / chunks; i < end; i += group) {
        const int64_t count = std::min(group, end - i);
        for (int64_t j = 0; j < count; ++j)
          pack_image(g, x + (i + j) * x_image, dy + (i + j) * dy_image, packed[static_cast<size_t>(j)]);
        if (db)
          for (int64_t j = 0; j < count; ++j) add_pixels(dy + (i + j) * dy_image, g.oh * g.pairs * 2, g.co, part + weights);
        for (int64_t kh = 0; kh < g.kh; ++kh)
          for (int64_t c0 = 0; c0 < g.ci; c0 += max_cib) {
            const int cib = static_cast<int>(std::min<int64_t>(max_cib, g.ci - c0));
            kAccumulate[static_cast<size_t>(cob - 1)][static_cast<size_t>(cib - 1)](g, packed.data(), count, kh, c0,
                                                                                     part);
          }
      }
    }
    // The chunks added pairwise in a tree fixed by their count, each sum by the thread that
    // summed its left chunk (the same static split, so mostly from its own cache, where one pass
    // over all chunks would read most of them from the other cores'): the order never depends on
    // the threads.
    for (int64_t step = 1; step < chunks; step *= 2) {
#pragma omp for schedule(static)
      for (int64_t c = 0; c < chunks; ++c) {
        if (c % (2 * step) != 0 || c + step >= chunks) continue;
        float* into = partial + c * size;
        const float* from = partial + (c + step) * size;
        for (int64_t e = 0; e < size; ++e) into[e] += from[e];
      }
    }
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = weights * t / threads, end = weights * (t + 1) / threads;
    floats_to_bf16(partial + begin, dk + begin, end - begin);
    if (db && t == 0) floats_to_bf16(partial + weights, db, g.co);
  }
}

}  // namespace keras::cpu
