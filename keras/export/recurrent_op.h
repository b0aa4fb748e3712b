// One recurrent cell (SimpleRNNCell, LSTMCell, GRUCell: the cell of a SimpleRNN / LSTM / GRU layer,
// of a generic RNN, or one cell of a StackedRNNCells) run over a time-major sequence as ONNX's
// RNN / LSTM / GRU operator.
//
// Keras keeps gates as column blocks of (in, k * units) kernels, ONNX as row blocks of
// (k * units, in): the kernels are transposed, and LSTM's blocks reordered from Keras's
// i, f, c, o to ONNX's i, o, f, c (GRU's z, r, h is the same in both; reset_after is ONNX's
// linear_before_reset).
//
// Masks: a Keras RNN keeps the previous states at a masked step and outputs the previous output
// (zeros with zero_output_for_mask). ONNX's sequence_lens only expresses trailing padding, so a
// masked sequence runs as a Scan whose body is the same ONNX operator on one step followed by
// Where(mask, new, old): holes anywhere in the sequence give what model.predict gives.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keras/export/scan_recurrence.h"
#include "layers/layer.h"

namespace keras::onnx {

struct OnnxCell {
  const Layer* cell = nullptr;  // owns the weights kernel, recurrent_kernel, bias
  nlohmann::json config;        // the cell's keys: units, activation, recurrent_activation, ...
  std::string op_type;          // "RNN", "LSTM" or "GRU"
  int gates = 1;
  std::vector<int> order;  // Keras gate block k of ONNX block position k
  int64_t units = 0;
  size_t state_count() const { return op_type == "LSTM" ? 2 : 1; }
};

// The ONNX cells of a recurrent layer (SimpleRNN, LSTM, GRU or RNN): one, or one per cell of its
// StackedRNNCells, in stacking order. NotImplementedError naming `where` for another cell class
// (a custom cell; ConvLSTMCell runs as keras/export/conv_lstm_op.h says).
std::vector<OnnxCell> onnx_cells(const Layer& recurrent_layer, const std::string& where);

struct SequenceRun {
  std::string x;                     // (T, N, F) time-major
  std::string mask;                  // (T, N, 1) bool, true = a real step; "" = none
  std::vector<std::string> initial;  // (N, units) per state (h[, c]); empty = zeros
  bool backwards = false;            // go_backwards: the last step is processed first
  bool zero_output_for_mask = false;
};

// Appends `cell` run over `run`; names from `hint`, errors name `where`.
SequenceResult emit_cell_sequence(Graph& g, const OnnxCell& cell, const SequenceRun& run, const std::string& hint,
                                  const std::string& where);

}  // namespace keras::onnx
