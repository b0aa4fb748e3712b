// Launchers of the fused recurrent op's elementwise step kernels (backend/cuda/rnn_kernels.cu),
// used by backend/cuda/rnn_ops.cpp, which runs the GEMMs in between on cuBLAS. Semantics are
// those of the CPU plain loops (backend/cpu/rnn_reference.cpp) element for element.
//
// Workspace (what the backward reads from the forward), slot-major so that one slot of every
// step is one contiguous (T*B, U) matrix (the weight gradients are then single GEMMs over all
// steps): slot k of processed step s starts at element (k * T + s) * B * U. Slots: the G'
// pre-activations (G' = gates, plus c_t for LSTM), their activations, h_{t-1}, then c_{t-1}
// (LSTM) or the GRU candidate's input (reset_after: the recurrent projection of h plus its bias;
// else r * h_{t-1}). Every pointer is a device pointer; launchers queue on `stream` only.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/dtype.h"

namespace keras::cuda::kernels {

// Keras activations the CPU plain loops run (Keras's default parameters).
enum class RnnAct : int {
  linear, relu, leaky_relu, relu6, elu, selu, gelu_erf, sigmoid, hard_sigmoid, hard_silu, tanh, softplus,
  softsign, silu, exponential
};
// The cell: GRU split by reset_after (true: one kernel a step; false: two, a GEMM between).
enum class RnnCell : int { lstm, gru_after, gru_before, simple };

// Sizes and the workspace slot map of one problem (constexpr: callable from device code too).
struct RnnLayout {
  RnnCell cell = RnnCell::lstm;
  int64_t B = 0, T = 0, U = 0, G = 1;
  constexpr int64_t gp() const { return G + (cell == RnnCell::lstm ? 1 : 0); }
  constexpr int64_t slots() const { return 2 * gp() + 1 + (cell == RnnCell::simple ? 0 : 1); }
  constexpr int64_t pre(int64_t g) const { return g; }
  constexpr int64_t act(int64_t g) const { return gp() + g; }
  constexpr int64_t h_prev() const { return 2 * gp(); }
  constexpr int64_t extra() const { return 2 * gp() + 1; }
  // Element offset of slot k of processed step s in the workspace.
  constexpr int64_t at(int64_t k, int64_t s) const { return (k * T + s) * B * U; }
  constexpr int64_t workspace_numel() const { return slots() * T * B * U; }
};

// One processed step s (reading input time t) of the forward.
struct RnnForwardStep {
  RnnLayout L;
  RnnAct act = RnnAct::tanh, rec_act = RnnAct::sigmoid;
  int64_t s = 0, t = 0;
  bool zero_output_for_mask = false;
  const void* xw = nullptr;     // (B, T, G*U): x @ kernel, without the bias
  const void* bias = nullptr;   // (G*U) input bias
  const void* rbias = nullptr;  // (G*U) recurrent bias, GRU reset_after only (else null)
  const void* rh = nullptr;     // (B, G*U): h_{t-1} @ recurrent_kernel (GRU reset_before: first 2U columns)
  const bool* mask = nullptr;   // (B, T) or null
  void* ws = nullptr;           // the workspace; h_{t-1} (and c_{t-1}) of step s already in place
  void* y = nullptr;            // (B, T, U) outputs in processed order
  void* h_next = nullptr;       // (B, U): where the state after this step goes
  void* c_next = nullptr;       // LSTM: likewise for c
};

// The whole step for LSTM, GRU reset_after and SimpleRNN; for GRU reset_before its second half
// (after the GEMM (r * h_{t-1}) @ recurrent_kernel[:, 2U:] wrote the candidate's pre slot).
void rnn_forward_step(DType t, const RnnForwardStep& p, cudaStream_t stream);
// GRU reset_before, first half: z, r and r * h_{t-1} (the extra slot).
void rnn_forward_gru_gates(DType t, const RnnForwardStep& p, cudaStream_t stream);

// One processed step of backpropagation through time.
struct RnnBackwardStep {
  RnnLayout L;
  RnnAct act = RnnAct::tanh, rec_act = RnnAct::sigmoid;
  int64_t s = 0, t = 0;
  bool zero_output_for_mask = false;
  const bool* mask = nullptr;  // (B, T) or null
  const void* ws = nullptr;    // the forward's workspace
  const void* dy = nullptr;    // (B, T, U)
  void* dh = nullptr;          // (B, U) state gradient after this step (updated by rnn_backward_state)
  void* dc = nullptr;          // LSTM: likewise
  void* dprev = nullptr;       // (B, U) output gradient carried to the previous output (masked rows)
  void* dhp = nullptr;         // (B, U) this step's gradient of h_{t-1} (the GEMM then adds to it)
  void* dcp = nullptr;         // LSTM: this step's gradient of c_{t-1}
  void* dg = nullptr;          // (B, T, G*U) pre-activation gradients by input time: dx, dkernel, dbias
  void* drh = nullptr;         // (T, B, G*U) by processed step: gradients of the recurrent projection
  const void* tmp = nullptr;   // GRU reset_before: (B, U) d(r * h_{t-1}) from the GEMM
};

// Gate gradients of a step: all of it for LSTM, GRU reset_after and SimpleRNN; for GRU
// reset_before the first half (up to the candidate's gradient, stored in drh's third block).
void rnn_backward_step(DType t, const RnnBackwardStep& p, cudaStream_t stream);
// GRU reset_before, second half: r's and z's gradients once tmp holds d(r * h_{t-1}).
void rnn_backward_gru_gates(DType t, const RnnBackwardStep& p, cudaStream_t stream);
// dh (dc) = dhp (dcp) at rows valid at step s; masked rows pass the state gradients unchanged.
void rnn_backward_state(DType t, const RnnBackwardStep& p, cudaStream_t stream);
// out[j] = sum over rows r (in order, accumulated in double) of m[r * ld + j], j < cols.
void rnn_column_sum(DType t, const void* m, int64_t rows, int64_t cols, int64_t ld, void* out, cudaStream_t stream);

}  // namespace keras::cuda::kernels
