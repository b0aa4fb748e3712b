#include "keras/export/recurrent_op.h"

#include <cstdio>

#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "layers/rnn.h"
#include "layers/stacked_rnn_cells.h"

namespace keras::onnx {
namespace {

std::string onnx_activation(const std::string& name, const std::string& where) {
  if (name == "tanh") return "Tanh";
  if (name == "sigmoid") return "Sigmoid";
  if (name == "relu") return "Relu";
  fail<NotImplementedError>(where, "a recurrent activation tanh, sigmoid or relu", "'" + name + "'");
}

// (rows, cols) -> (cols, rows) with the column blocks of width `block` taken in `order`, as a
// (1, cols, rows) ONNX weight (one direction).
HostTensor gate_rows(const HostTensor& kernel, int64_t block, const std::vector<int>& order) {
  const HostTensor t = permute(kernel, {1, 0});  // (k * units, rows)
  const int64_t rows = t.shape[1];
  HostTensor out{{1, t.shape[0], rows}, {}};
  out.data.reserve(t.data.size());
  for (int g : order)
    out.data.insert(out.data.end(), t.data.begin() + static_cast<std::ptrdiff_t>(g * block * rows),
                    t.data.begin() + static_cast<std::ptrdiff_t>((g + 1) * block * rows));
  return out;
}

// ONNX's B (1, 2 * k * units): the input biases in `order`, then the recurrent ones (zeros when
// Keras has a single bias).
HostTensor gate_bias(const std::vector<float>& input, const std::vector<float>& recurrent, int64_t block,
                     const std::vector<int>& order) {
  HostTensor out{{1, static_cast<int64_t>(2 * order.size()) * block}, {}};
  for (const auto* src : {&input, &recurrent})
    for (int g : order)
      for (int64_t j = 0; j < block; ++j)
        out.data.push_back(src->empty() ? 0.f : (*src)[static_cast<size_t>(g * block + j)]);
  return out;
}

OnnxCell cell_of(const Layer& cell, const std::string& where) {
  OnnxCell c;
  c.cell = &cell;
  c.config = cell.get_config();
  const std::string cls = cell.class_name();
  if (cls == "LSTMCell") c.op_type = "LSTM", c.gates = 4, c.order = {0, 3, 1, 2};  // i, f, c, o -> i, o, f, c
  else if (cls == "GRUCell") c.op_type = "GRU", c.gates = 3, c.order = {0, 1, 2};
  else if (cls == "SimpleRNNCell") c.op_type = "RNN", c.gates = 1, c.order = {0};
  else
    fail<NotImplementedError>(where, "cells LSTMCell, GRUCell or SimpleRNNCell", cell.where(),
                              "Custom cells have no ONNX mapping.");
  c.units = c.config.at("units").get<int64_t>();
  return c;
}

// The cell's weight `what` ("W", "R", "B"), made once per cell (a shared layer reuses it).
std::string cell_weight(Graph& g, const OnnxCell& c, const std::string& what, const std::string& hint) {
  char key[48];
  std::snprintf(key, sizeof key, "%p/cell/", static_cast<const void*>(c.cell));
  return g.weight(key + what, hint + "/" + what, [&] {
    if (what == "W") return gate_rows(host_weight(*c.cell, "kernel"), c.units, c.order);
    if (what == "R") return gate_rows(host_weight(*c.cell, "recurrent_kernel"), c.units, c.order);
    const HostTensor b = host_weight(*c.cell, "bias");
    const size_t n = static_cast<size_t>(c.gates * c.units);
    if (b.data.size() == 2 * n)  // GRU reset_after: (2, 3 units), input then recurrent
      return gate_bias({b.data.begin(), b.data.begin() + static_cast<std::ptrdiff_t>(n)},
                       {b.data.begin() + static_cast<std::ptrdiff_t>(n), b.data.end()}, c.units, c.order);
    return gate_bias(b.data, {}, c.units, c.order);
  });
}

std::vector<Attr> op_attrs(const OnnxCell& c, bool reverse, const std::string& where) {
  const std::string act = onnx_activation(c.config.value("activation", "tanh"), where);
  std::vector<std::string> activations{act};
  if (c.op_type != "RNN") {
    const std::string rec = onnx_activation(c.config.value("recurrent_activation", "sigmoid"), where);
    activations = c.op_type == "LSTM" ? std::vector<std::string>{rec, act, act} : std::vector<std::string>{rec, act};
  }
  std::vector<Attr> attrs{attr("hidden_size", c.units), attr("direction", reverse ? "reverse" : "forward"),
                          attr_strings("activations", activations)};
  if (c.op_type == "GRU") attrs.push_back(attr("linear_before_reset", int64_t{c.config.value("reset_after", true) ? 1 : 0}));
  return attrs;
}

// The op's inputs X, W, R, B, sequence_lens (none), initial states (each (1, N, U)).
std::vector<std::string> op_inputs(Graph& g, const OnnxCell& c, const std::string& x, const std::vector<std::string>& states,
                                   const std::string& hint) {
  std::vector<std::string> args{x, cell_weight(g, c, "W", hint), cell_weight(g, c, "R", hint)};
  args.push_back(c.config.value("use_bias", true) ? cell_weight(g, c, "B", hint) : "");
  if (states.empty()) {
    if (args.back().empty()) args.pop_back();
    return args;
  }
  args.push_back("");
  args.insert(args.end(), states.begin(), states.end());
  return args;
}

std::string squeeze(Graph& g, const std::string& x, int64_t axis, const std::string& hint) {
  return g.add("Squeeze", {x, g.constant_ints(hint + "_axis", {axis})}, {}, hint);
}
std::string unsqueeze(Graph& g, const std::string& x, int64_t axis, const std::string& hint) {
  return g.add("Unsqueeze", {x, g.constant_ints(hint + "_axis", {axis})}, {}, hint);
}

SequenceResult unmasked(Graph& g, const OnnxCell& c, const SequenceRun& run, const std::string& hint, const std::string& where) {
  std::vector<std::string> states;
  for (size_t k = 0; k < run.initial.size(); ++k) states.push_back(unsqueeze(g, run.initial[k], 0, hint + "/initial_state"));
  const int n_out = static_cast<int>(c.state_count()) + 1;  // Y, Y_h[, Y_c]
  const auto outs = g.add_multi(c.op_type, op_inputs(g, c, run.x, states, hint), op_attrs(c, run.backwards, where),
                                hint + "/" + c.op_type, n_out);
  SequenceResult r;
  r.sequence = squeeze(g, outs[0], 1, hint + "/Y");  // (T, 1, N, U) -> (T, N, U)
  r.last = squeeze(g, outs[1], 0, hint + "/last");
  r.states.push_back(r.last);
  if (n_out == 3) r.states.push_back(squeeze(g, outs[2], 0, hint + "/last_c"));
  return r;
}

// A Scan whose body is the same ONNX operator on one step (scan_recurrence.h keeps the states at
// masked steps).
SequenceResult masked(Graph& g, const OnnxCell& c, const SequenceRun& run, const std::string& hint, const std::string& where) {
  ScanRecurrence scan;
  scan.x = run.x;
  scan.mask = run.mask;
  scan.zero_output = batch_zeros(g, run.x, 1, {c.units}, hint + "/zeros");
  scan.initial = run.initial;
  if (scan.initial.empty()) scan.initial.assign(c.state_count(), scan.zero_output);
  scan.x_step = {-1, -1};
  scan.output_step = {-1, c.units};
  scan.backwards = run.backwards;
  scan.zero_output_for_mask = run.zero_output_for_mask;
  // Weights live in the outer graph; the body reads them by name.
  const std::vector<std::string> weights = op_inputs(g, c, "", {}, hint);
  auto step = [&](Graph& body, const std::string& x_t, const std::vector<std::string>& h) {
    std::vector<std::string> args = weights;
    args[0] = unsqueeze(body, x_t, 0, hint + "/step_x3d");
    args.resize(4);  // X, W, R, B ("" without a bias)
    args.push_back("");
    for (const auto& s : h) args.push_back(unsqueeze(body, s, 0, hint + "/step_state3d"));
    const int n_out = static_cast<int>(c.state_count()) + 1;  // Y, Y_h[, Y_c]
    const auto outs = body.add_multi(c.op_type, args, op_attrs(c, false, where), hint + "/step_" + c.op_type, n_out);
    StepOutputs r;
    for (size_t k = 0; k < c.state_count(); ++k) r.states.push_back(squeeze(body, outs[k + 1], 0, hint + "/step_new_state"));
    r.output = r.states[0];
    return r;
  };
  return emit_scan_recurrence(g, scan, step, hint);
}

}  // namespace

std::vector<OnnxCell> onnx_cells(const Layer& layer, const std::string& where) {
  const auto* rnn = dynamic_cast<const layers::RNNImpl*>(&layer);
  if (!rnn) fail<NotImplementedError>(where, "a recurrent layer (SimpleRNN, LSTM, GRU or RNN)", layer.class_name());
  std::vector<OnnxCell> out;
  if (const auto* stack = dynamic_cast<const layers::StackedRNNCellsImpl*>(rnn->cell().get())) {
    for (const auto& cell : stack->cells()) out.push_back(cell_of(*cell, where));
  } else {
    out.push_back(cell_of(*rnn->cell(), where));
  }
  return out;
}

SequenceResult emit_cell_sequence(Graph& g, const OnnxCell& cell, const SequenceRun& run, const std::string& hint,
                                  const std::string& where) {
  if (!run.initial.empty() && run.initial.size() != cell.state_count())
    fail<ValueError>(where, std::to_string(cell.state_count()) + " initial state(s) per cell",
                     std::to_string(run.initial.size()));
  return run.mask.empty() ? unmasked(g, cell, run, hint, where) : masked(g, cell, run, hint, where);
}

}  // namespace keras::onnx
