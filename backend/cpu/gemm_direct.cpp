// The multithreaded direct GEMM of gemm_direct.h: small_gemm.h's tiles on each thread's block of C.
#include "backend/cpu/gemm_direct.h"

#include <omp.h>

#include <algorithm>

#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/dense_panels.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/small_gemm.h"
#include "backend/determinism.h"

namespace keras::cpu {
namespace {

// Below this many multiply-adds one thread runs the product: waking the team costs more.
constexpr int64_t kParallelMacs = int64_t{1} << 15;

// Rows [r0, r1) x columns [c0, c1) of C: the product, then bias and ReLU while the block is hot.
void block(const DirectGemm& g, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (r0 >= r1 || c0 >= c1) return;
  const int64_t a_row = g.a_transposed ? 1 : g.k, a_col = g.a_transposed ? g.m : 1;
  small_gemm(r1 - r0, c1 - c0, g.k, g.a + r0 * a_row, a_row, a_col, g.b + c0, g.n, g.c + r0 * g.n + c0, g.n, false);
  if (!g.bias && !g.relu) return;
  for (int64_t i = r0; i < r1; ++i) {
    float* row = g.c + i * g.n;
#pragma omp simd
    for (int64_t j = c0; j < c1; ++j) {
      const float v = g.bias ? row[j] + g.bias[j] : row[j];
      row[j] = g.relu && v < 0.0f ? 0.0f : v;  // a NaN stays NaN, as oneDNN's and the panels' ReLU keep it
    }
  }
}

}  // namespace

bool gemm_direct_supported(int64_t n) {
  return n > 0 && n % 8 == 0 && small_gemm_available() && conv_direct_available();
}

void gemm_direct(const DirectGemm& g) {
  // The widest tile's columns: a thread's share of a row group is whole tiles but for the last.
  const int64_t width = isa_allows_avx512() ? 32 : 16, tile_rows = isa_allows_avx512() ? 12 : 6;
  const int64_t column_blocks = (g.n + width - 1) / width;
#pragma omp parallel if (g.m * g.n * g.k >= kParallelMacs)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    // Row groups as the inference panels split them (dense_panels.h says why: with stacked Dense
    // layers a thread then reads the rows it wrote), the columns shared within a group.
    const int64_t groups = dense_row_groups(g.m, tile_rows, threads), members = threads / groups;
    const int64_t group = t / members, member = t % members;
    const int64_t r0 = g.m * group / groups, r1 = g.m * (group + 1) / groups;
    const int64_t c0 = std::min(g.n, column_blocks * member / members * width);
    const int64_t c1 = std::min(g.n, column_blocks * (member + 1) / members * width);
    block(g, r0, r1, c0, c1);  // at most one block a thread (groups divides the thread count); it may be empty
  }
}

bool run_gemm_chosen(const std::string& op, const DirectGemm& g, const std::function<void()>& onednn) {
  if (g.m <= 0 || g.k <= 0 || !gemm_direct_supported(g.n) || op_determinism()) return false;
  const std::string key = KeyBuilder(op)
                              .add(g.m)
                              .add(g.k)
                              .add(g.n)
                              .add(int64_t{g.a_transposed})
                              .add(std::string(g.relu ? "relu" : "linear"))
                              .add(int64_t{g.bias != nullptr})
                              .str();
  ConvTrial trial;
  trial.run = [&](ConvCandidate c) {
    if (c == ConvCandidate::direct)
      gemm_direct(g);
    else
      onednn();
  };
  trial.outputs = {{g.c, static_cast<size_t>(g.m * g.n)}};
  run_conv(key, {ConvCandidate::direct, ConvCandidate::onednn_direct}, trial);
  return true;
}

}  // namespace keras::cpu
