// The Dense forward from column panels (see dense_panels.h): AVX2 tiles of up to 6 rows x 16
// columns (12 ymm accumulators), AVX-512 tiles of up to 12 rows x 32 columns (24 zmm).
#include "backend/cpu/dense_panels.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/autodiff.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/weight_cache.h"
#include "backend/determinism.h"

namespace keras::cpu {
namespace {

// One tile: rows [0, R) of x against one panel, bias and activation applied, the first `cols`
// columns stored (a last panel may hang past the units).
template <int R>
__attribute__((target("avx2,fma"))) void tile_avx2(int64_t k, const float* x, int64_t ldx, const float* panel,
                                                   const float* bias, bool relu, float* y, int64_t ldy, int cols) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
#pragma GCC unroll 4  // ~10% faster than rolled: the loop's own adds and branch no longer pace it
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_load_ps(panel + p * 16), b1 = _mm256_load_ps(panel + p * 16 + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(x + r * ldx + p);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  const __m256 zero = _mm256_setzero_ps(), bias0 = _mm256_loadu_ps(bias), bias1 = _mm256_loadu_ps(bias + 8);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i keep0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
  const __m256i keep1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8), lane);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    __m256 v0 = _mm256_add_ps(acc[r][0], bias0), v1 = _mm256_add_ps(acc[r][1], bias1);
    if (relu) {  // max(v, 0) with v second: a NaN stays NaN, as oneDNN's relu keeps it
      v0 = _mm256_max_ps(zero, v0);
      v1 = _mm256_max_ps(zero, v1);
    }
    if (cols == 16) {
      _mm256_storeu_ps(y + r * ldy, v0);
      _mm256_storeu_ps(y + r * ldy + 8, v1);
    } else {
      _mm256_maskstore_ps(y + r * ldy, keep0, v0);
      _mm256_maskstore_ps(y + r * ldy + 8, keep1, v1);
    }
  }
}

template <int R>
__attribute__((target("avx512f"))) void tile_avx512(int64_t k, const float* x, int64_t ldx, const float* panel,
                                                    const float* bias, bool relu, float* y, int64_t ldy, int cols) {
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; ++p) {
    const __m512 b0 = _mm512_load_ps(panel + p * 32), b1 = _mm512_load_ps(panel + p * 32 + 16);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(x[r * ldx + p]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  const __m512 zero = _mm512_setzero_ps(), bias0 = _mm512_loadu_ps(bias), bias1 = _mm512_loadu_ps(bias + 16);
  const __mmask16 keep0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1);
  const __mmask16 keep1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    __m512 v0 = _mm512_add_ps(acc[r][0], bias0), v1 = _mm512_add_ps(acc[r][1], bias1);
    if (relu) {
      v0 = _mm512_maskz_max_ps(0xFFFF, zero, v0);  // maskz: GCC 12 warns on the unmasked form
      v1 = _mm512_maskz_max_ps(0xFFFF, zero, v1);
    }
    _mm512_mask_storeu_ps(y + r * ldy, keep0, v0);
    _mm512_mask_storeu_ps(y + r * ldy + 16, keep1, v1);
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, const float*, bool, float*, int64_t, int);

template <int... R>
constexpr auto avx2_tiles(std::integer_sequence<int, R...>) {
  return std::array<TileFn, sizeof...(R)>{tile_avx2<R + 1>...};
}
template <int... R>
constexpr auto avx512_tiles(std::integer_sequence<int, R...>) {
  return std::array<TileFn, sizeof...(R)>{tile_avx512<R + 1>...};
}

// The packed layout of a (k, units) float32 kernel (dense_panels.h): oneDNN's BA16a<P>b.
dnnl::memory::desc panel_desc(int64_t k, int64_t units, int width) {
  using tag = dnnl::memory::format_tag;
  return dnnl::memory::desc({k, units}, dnnl::memory::data_type::f32, width == 32 ? tag::BA16a32b : tag::BA16a16b);
}

}  // namespace

int dense_panel_width() {
  if (isa_allows_avx512()) return 32;
  return isa_allows_avx2() ? 16 : 0;
}

bool dense_panels_supported(const std::string& activation) {
  return conv_direct_available() && dense_panel_width() > 0 && (activation == "linear" || activation == "relu");
}

void dense_panels(int64_t rows, int64_t k, int64_t units, const float* x, const float* panels, int64_t padded_k,
                  const float* bias, float* y, bool relu) {
  static const auto avx2 = avx2_tiles(std::make_integer_sequence<int, 6>());
  static const auto avx512 = avx512_tiles(std::make_integer_sequence<int, 12>());
  const int width = dense_panel_width();
  const int64_t tile_rows = width == 32 ? 12 : 6;
  const TileFn* tiles = width == 32 ? avx512.data() : avx2.data();
  const int64_t panel_count = (units + width - 1) / width;
#pragma omp parallel if (panel_count * ((rows + tile_rows - 1) / tile_rows) > 1)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t groups = dense_row_groups(rows, tile_rows, threads), members = threads / groups;
    const int64_t group = t / members, member = t % members;
    const int64_t r0 = rows * group / groups, r1 = rows * (group + 1) / groups;
    // The group's rows in blocks of at most tile_rows, as equal as can be; its tasks panel-major in
    // contiguous ranges: a thread keeps to few panels (each read from L2 once per row block), and a
    // one-panel layer still splits its rows.
    const int64_t blocks = (r1 - r0 + tile_rows - 1) / tile_rows, tasks = panel_count * blocks;
    for (int64_t task = tasks * member / members; task < tasks * (member + 1) / members; ++task) {
      const int64_t j = task / blocks, b = task % blocks;
      const int64_t i = r0 + (r1 - r0) * b / blocks, n = r0 + (r1 - r0) * (b + 1) / blocks - i;
      const int cols = static_cast<int>(std::min<int64_t>(width, units - j * width));
      alignas(64) float panel_bias[32] = {};
      if (bias) std::copy(bias + j * width, bias + j * width + cols, panel_bias);
      tiles[n - 1](k, x + i * k, k, panels + j * padded_k * width, panel_bias, relu, y + i * units + j * width, units,
                   cols);
    }
  }
}

int64_t dense_row_groups(int64_t rows, int64_t tile_rows, int64_t threads) {
  for (int64_t groups = threads; groups > 1; --groups)
    if (threads % groups == 0 && rows / groups >= 2 * tile_rows) return groups;
  return 1;
}

bool run_dense_chosen(const Tensor& x, const Tensor& w, const float* bias, Tensor& y, int64_t rows,
                      const std::string& activation, const std::function<void()>& onednn) {
  // A training step (a tape recording) writes its weight every step: no packed copy per step
  // (gemm_direct.h reads it as it lies). Deterministic mode keeps oneDNN.
  if (!dense_panels_supported(activation) || grad_recording() || op_determinism()) return false;
  const int64_t k = w.dim(0), units = w.dim(1);
  // No row count in the key: one kernel for every batch size, so a sample's result does not depend
  // on the batch it is predicted in (each candidate's rows are computed alike whatever their count).
  const std::string key = KeyBuilder("dense").add(k).add(units).add(activation).add(int64_t{bias != nullptr}).str();
  // Decided for oneDNN already: no packed copy of ours (it would only take memory and a cache slot).
  if (conv_choice_for(key) == ConvCandidate::onednn_direct) return false;
  const dnnl::memory::desc plain({k, units}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc packed_desc = panel_desc(k, units, dense_panel_width());
  const std::string layout = KeyBuilder("dense_panels").add(k).add(units).add(int64_t{dense_panel_width()}).str();
  dnnl::memory packed = prepared_weights(w, plain, packed_desc, layout);  // once per weight version
  const auto* panels = static_cast<const float*>(packed.get_data_handle());
  const int64_t padded_k = packed_desc.data.padded_dims[0];
  ConvTrial trial;
  trial.run = [&](ConvCandidate c) {
    if (c == ConvCandidate::direct)
      dense_panels(rows, k, units, x.data<float>(), panels, padded_k, bias, y.data<float>(), activation == "relu");
    else
      onednn();
  };
  trial.outputs = {{y.data<float>(), static_cast<size_t>(y.numel())}};
  trial.warm = true;
  run_conv(key, {ConvCandidate::direct, ConvCandidate::onednn_direct}, trial);
  return true;
}

}  // namespace keras::cpu
