// The project's own float32 Dense forward, y = act(x W + b), from W packed in column panels: the
// `direct` candidate of the Dense products that the kernel chooser (conv_choice.h) times against
// oneDNN's matmul.
//
// Why: a Dense layer in inference is a GEMM with a small row count (the batch) and a weight that
// does not change between calls, so it can be packed once (weight_cache.h) into panels of P
// columns, each panel's K rows contiguous. Register tiles of R rows x P columns then read one panel row
// and broadcast R inputs per step, with nothing packed per call. Capped at AVX2, oneDNN 2.6 runs
// these shapes with its AVX2 sgemm at ~76-80% of the FMA peak, and a 10-unit output layer at a
// few percent; these tiles reach ~82-88%.
//
// Layout of the packed weight: oneDNN's BA16a<P>b format of the (K, N) kernel, which for K a
// multiple of 16 is [ceil(N / P)][K][P] floats (K and N padded to their blocks; padding never read
// into a result). P = dense_panel_width().
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "backend/tensor.h"

namespace keras::cpu {

// Columns per panel for this CPU's kernels: 32 where AVX-512 is allowed, 16 with AVX2 and FMA,
// 0 without (cpu_isa.h's cap applies).
int dense_panel_width();

// True where dense_panels can compute a Dense with this activation: a vector ISA, "linear" or
// "relu", and the switch of the project's direct kernels on (KERAS_CONV_DIRECT=0 or
// set_conv_direct(false) turns these off with them, conv_direct.h).
bool dense_panels_supported(const std::string& activation);

// y (rows x units, row-major) = act(x (rows x k, row-major) @ W + bias). `panels`: W in the
// packed layout above, 64-byte aligned (panel rows are loaded aligned), with `padded_k`
// its padded row count; `bias` may be null. Each
// output element is summed over k in order by one FMA chain in one thread, so the result does
// not depend on the thread count. Preconditions: dense_panels_supported(activation), k >= 1.
void dense_panels(int64_t rows, int64_t k, int64_t units, const float* x, const float* panels, int64_t padded_k,
                  const float* bias, float* y, bool relu);

// How many groups of rows dense_panels splits `rows` into among `threads` threads (threads /
// groups threads share each group's panels): the most that divides `threads` and leaves every
// group at least two tiles of `tile_rows` rows; 1 (all threads share every row, each its own
// panels) for small batches.
//
// Why rows: with a group per thread (a small thread count), a thread then reads only the rows of
// x that it wrote as the layer before's output (stacked Dense layers), while split by panels
// every thread reads every row, half of them from the other core's cache. Where a host places two vCPUs on different AMD core complexes, such a
// line costs 300+ ns: 784-512-512-10 inference at batch 128 on 2 threads ran 142-147K samples/s
// split by panels and 158-163K by rows (on one complex: 152-158K and 164K). The price, each thread reading the whole packed weight
// rather than its panels, stays small with two tiles of rows a thread: at 24 rows (AVX-512's two
// tiles) every weight byte read serves 12 flops, at 12 (AVX2's) 6.
int64_t dense_row_groups(int64_t rows, int64_t tile_rows, int64_t threads);

// A float32 Dense y = act(x W + b) (x: rows x k, W: k x units, contiguous) run by whichever of
// dense_panels (`direct`) and oneDNN's matmul (`onednn_direct`, the caller's `onednn`) the
// chooser of conv_choice.h timed faster for this layer shape (key: k, units, activation, bias,
// thread count; not the rows, so that a sample gives the same bits in any batch), with W packed once per version (weight_cache.h). Only outside a recording
// GradientTape (predict, evaluate, any call without a tape), so that every such call of a
// problem, the first included, gives the same bits. Returns false, having written nothing, and
// the caller runs something else: in a training step (a tape recording: its weight is written
// every step, which gemm_direct.h's kernel reads unpacked), in deterministic mode, where the
// panels do not apply, and once oneDNN has won the problem (no packed copy then).
bool run_dense_chosen(const Tensor& x, const Tensor& w, const float* bias, Tensor& y, int64_t rows,
                      const std::string& activation, const std::function<void()>& onednn);

}  // namespace keras::cpu
