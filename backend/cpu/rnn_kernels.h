// CPU kernels of the fused recurrent ops (op definitions and Keras semantics: backend/ops_rnn.h).
//
// rnn_sequence           inputs  x, kernel, recurrent_kernel, bias, h0 [, c0 (LSTM)] [, mask]
//                        outputs y (B,T,U), h_T [, c_T], workspace
// rnn_sequence_backward  inputs  the forward's inputs, then its outputs, then dy, dh_T [, dc_T]
//                        outputs dx, dkernel, drecurrent_kernel, dbias, dh0 [, dc0]
// The workspace is what the backward needs from the forward: for the reference, every step's
// gate pre-activations, activations and previous states; for oneDNN, its opaque workspace
// (stored as float32 words). It must come from the same implementation as the backward.
// The op's workspace output is a one-element HANDLE whose storage holds the whole workspace: the
// tape zero-fills a gradient for every output of a recorded op, and a full-size workspace output
// would cost that zero-filled copy (tens of MB for a 256-unit LSTM over 50 steps) every step.
#pragma once
#include <string>

#include "backend/op_registry.h"

namespace keras::cpu {

// Everything that shapes one recurrent problem, read from the op's inputs and attrs.
struct RnnProblem {
  std::string kind;  // "lstm", "gru", "simple_rnn"
  int64_t batch = 0, time = 0, input = 0, units = 0, gates = 0;
  std::string activation, recurrent_activation;
  bool reset_after = false, go_backwards = false, zero_output_for_mask = false, masked = false;
  bool training = true;  // a backward will follow (oneDNN: forward_training, else inference)
  DType dtype = DType::float32;

  static RnnProblem from(const TensorList& inputs, const Attrs& attrs);
  bool lstm() const { return kind == "lstm"; }
  bool gru() const { return kind == "gru"; }
  size_t state_count() const { return lstm() ? 2 : 1; }
  size_t forward_input_count() const { return 5 + (lstm() ? 1 : 0) + (masked ? 1 : 0); }
  size_t mask_index() const { return 5 + (lstm() ? 1 : 0); }
  // Step s of the processed order reads input time step time_of(s).
  int64_t time_of(int64_t s) const { return go_backwards ? time - 1 - s : s; }
};

// A workspace of `numel` elements (at least one is allocated) and its handle, and back.
struct RnnWorkspace {
  Tensor flat;    // (numel,) over the whole allocation
  Tensor handle;  // (1,) view of it: the op's output
  static RnnWorkspace allocate(int64_t numel, DType dtype);
  static Tensor of(const Tensor& handle, int64_t numel);  // the (numel,) workspace behind a handle
};

// Plain loops, float32 and float64, every kind, mask and activation pair (rnn_reference.cpp).
void rnn_reference_forward(const RnnProblem& p, const TensorList& inputs, TensorList& outputs);
void rnn_reference_backward(const RnnProblem& p, const TensorList& inputs, TensorList& outputs);

// oneDNN primitives: float32, no mask, LSTM/GRU with tanh + sigmoid, SimpleRNN with tanh, relu
// or sigmoid (rnn_onednn.cpp). NotImplementedError for anything else.
bool rnn_onednn_supports(const RnnProblem& p);
void rnn_onednn_forward(const RnnProblem& p, const TensorList& inputs, TensorList& outputs);
void rnn_onednn_backward(const RnnProblem& p, const TensorList& inputs, TensorList& outputs);

}  // namespace keras::cpu
