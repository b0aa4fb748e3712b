// A recurrence as an ONNX Scan: a body computes one step from the step input and the carried
// states, and the Scan runs it over a time-major sequence. The recurrent layers use it where no
// single ONNX operator expresses the sequence: masked sequences (a Keras RNN keeps its states at
// masked steps, which ONNX's sequence_lens cannot say for holes in the middle) and cells without
// an ONNX recurrent operator (ConvLSTMCell, keras/export/conv_lstm_op.h).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "keras/export/onnx_graph.h"

namespace keras::onnx {

// A sequence run by a recurrent layer's cell, in the layout of the ONNX ops that compute it.
struct SequenceResult {
  std::string sequence;             // (T, N, ...) per step, in time order (not processing order)
  std::string last;                 // (N, ...): the output of the last processed step
  std::vector<std::string> states;  // (N, ...) per state, final
};

// What a step body returns: the step's output and the new states, one per carried state.
struct StepOutputs {
  std::string output;
  std::vector<std::string> states;
};
// Appends one step's computation to `body` (a Scan body: tensors of the outer graph, weights,
// may be read by name). `x_t` is the step input, `states` the carried states.
using StepBody = std::function<StepOutputs(Graph& body, const std::string& x_t, const std::vector<std::string>& states)>;

struct ScanRecurrence {
  std::string x;                     // (T, N, ...) time-major
  std::string mask;                  // (T, N, 1, ...) bool broadcasting over a step's output; "" = none
  std::vector<std::string> initial;  // (N, ...) per state, required
  std::string zero_output;           // (N, ...) zeros shaped as a step's output: the output before the first step
  Shape x_step;                      // one step's input shape (-1 = unknown), for the body's signature
  Shape output_step;                 // one step's output shape; the states have it too unless state_steps says
  std::vector<Shape> state_steps;    // one step's state shapes ({} = output_step for every state)
  bool backwards = false;            // go_backwards: the last step is processed first
  bool zero_output_for_mask = false;  // masked steps output zeros instead of the previous output
};

// Appends the Scan of `step` over `run`: with a mask, masked steps keep the states and output the
// previous output (zeros with zero_output_for_mask), as Keras's RNN does. Names from `hint`.
SequenceResult emit_scan_recurrence(Graph& g, const ScanRecurrence& run, const StepBody& step, const std::string& hint);

// (N, ...) zeros of a step's output, batch N from axis `batch_axis` of `like`, for the initial
// states and outputs a layer was not given: `step` is the rest of the shape, all known.
std::string batch_zeros(Graph& g, const std::string& like, int64_t batch_axis, const Shape& step, const std::string& hint);

}  // namespace keras::onnx
