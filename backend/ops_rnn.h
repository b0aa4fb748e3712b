// Fused recurrent sequence op: a whole LSTM, GRU or SimpleRNN layer over a sequence in one op,
// with Keras 3's weight layouts, gate orders and mask / go_backwards semantics, differentiable
// through the tape (its backward is one op too: backpropagation through time in one kernel).
//
// Two CPU kernel paths run it (backend/cpu/rnn_reference.cpp, backend/cpu/rnn_onednn.cpp):
//  - oneDNN's RNN primitives (lstm, gru, lbr_gru, vanilla_rnn) for float32 without a mask and
//    with the activations oneDNN has (LSTM/GRU: tanh + sigmoid; SimpleRNN: tanh, relu, sigmoid);
//  - plain loops for everything else Keras allows (float64, masks, any elementwise activation
//    pair). rnn_sequence_uses_onednn() says which one a call takes.
#pragma once
#include <string>

#include "backend/op_registry.h"

namespace keras::ops {

enum class RnnKind { lstm, gru, simple_rnn };

// Gates per kind in Keras's order: LSTM 4 (i, f, c, o), GRU 3 (z, r, h), SimpleRNN 1.
int64_t rnn_gate_count(RnnKind kind);
std::string rnn_kind_name(RnnKind kind);  // "lstm", "gru", "simple_rnn"

struct RnnSequenceArgs {
  RnnKind kind = RnnKind::lstm;
  Tensor x;                 // (batch, time, input), float32 or float64
  Tensor kernel;            // (input, G*units), gate-major columns as Keras stores it
  Tensor recurrent_kernel;  // (units, G*units)
  // (G*units); for GRU with reset_after Keras's (2, 3*units): row 0 input bias, row 1 recurrent
  // bias. Undefined = use_bias=False.
  Tensor bias;
  Tensor initial_h;  // (batch, units); undefined = zeros
  Tensor initial_c;  // LSTM only: (batch, units); undefined = zeros
  // (batch, time) boolean; undefined = every step valid. A masked step keeps the states and
  // outputs zeros (zero_output_for_mask) or the previous step's output (zeros before the first
  // valid step), as keras.src.backend.tensorflow.rnn does.
  Tensor mask;
  bool go_backwards = false;          // process time reversed; outputs stay in processed order
  bool zero_output_for_mask = false;  // Keras 3's LSTM/GRU/SimpleRNN layers leave this False
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";  // LSTM and GRU only
  bool reset_after = true;                       // GRU only
  // "auto" (oneDNN where it applies), "reference" (plain loops) or "onednn" (NotImplementedError
  // where oneDNN cannot run the call).
  std::string implementation = "auto";
};

// Runs the recurrence. Returns {outputs (batch, time, units), h_T (batch, units)} plus c_T for
// LSTM: outputs[:, s] is the output of the s-th PROCESSED step (with go_backwards, of input
// step time-1-s), and the final states are those after the last processed step.
// Throws ShapeError naming the argument whose shape disagrees, TypeError for non-float or mixed
// dtypes or a non-boolean mask, ValueError for an unknown kind/activation/implementation.
TensorList rnn_sequence(const RnnSequenceArgs& args);

// True when rnn_sequence(args) runs on oneDNN's primitives: CPU, float32, no mask, at least one
// batch row and step, supported activations, implementation "auto" or "onednn".
bool rnn_sequence_uses_onednn(const RnnSequenceArgs& args);

}  // namespace keras::ops
