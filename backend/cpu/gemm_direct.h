// The project's own multithreaded float32 GEMM on operands as they lie (nothing packed): the
// `direct` candidate that the kernel chooser (conv_choice.h) times against oneDNN's matmul for a
// training step's Dense forward (keys "dense_train;") and for matmuls that are one product with B
// as it lies (2-D, or a batch of A against one B folded into its rows; keys "matmul;": a Dense
// layer's weight gradient x^T dz among them).
//
// Why: a training step writes each Dense weight before the next forward, so the inference
// kernels' packed panels (dense_panels.h) would be packed anew for every use, and oneDNN's sgemm
// copies its operands on every call. small_gemm.h's register tiles read B's rows in place and
// reach ~90% of the FMA peak on mlp's 128x784x512 and 128x512x512 products, forward and weight
// gradient alike. oneDNN's AVX2 sgemm ran the forward at ~56% on a Zen 4 capped at AVX2 (0.78
// against 0.49 ms), its AVX-512 one at ~90% there; which wins depends on the machine, hence the
// chooser.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace keras::cpu {

// C (m x n, row-major, contiguous) = op(A) B [+ bias] [then ReLU]. A is (m x k) row-major, or
// stored as its transpose (k x m, row-major) when `a_transposed`; B is (k x n) row-major; bias
// (n) may be null.
struct DirectGemm {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  bool a_transposed = false;
  const float* b = nullptr;
  float* c = nullptr;
  const float* bias = nullptr;
  bool relu = false;
};

// True where gemm_direct can run a product of n columns: small_gemm's kernels (AVX2 and FMA,
// cpu_isa.h's cap applies), n a positive multiple of 8, and the project's direct kernels switched
// on (KERAS_CONV_DIRECT=0 or set_conv_direct(false) turn this off with them, conv_direct.h).
bool gemm_direct_supported(int64_t n);

// Computes `g` on the OpenMP team: C's rows in groups (dense_row_groups), each group's columns
// shared among its threads. Each element is one FMA chain over k in order, then + bias, then
// max(0, .) keeping NaN: the result does not depend on the thread count, and equals
// dense_panels' bit for bit on the same operands with a bias (without one the panels add +0,
// which turns a -0 sum into +0). Preconditions: gemm_direct_supported(g.n), m, k >= 1.
void gemm_direct(const DirectGemm& g);

// Runs `g` (activation "linear" or "relu", as g.relu says) by whichever of gemm_direct (`direct`)
// and oneDNN (`onednn_direct`: the caller's `onednn`, which must compute the same C) the chooser
// timed faster for the key `op;m;k;n;a_transposed;activation;bias` (thread count added by the
// chooser). Returns false, having written nothing, where gemm_direct does not apply, for an empty
// product, and in deterministic mode (oneDNN then runs every such product, as it runs Dense).
bool run_gemm_chosen(const std::string& op, const DirectGemm& g, const std::function<void()>& onednn);

}  // namespace keras::cpu
