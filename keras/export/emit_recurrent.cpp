// ONNX emitters of the recurrent layers SimpleRNN, LSTM, GRU, the generic RNN over a SimpleRNNCell /
// LSTMCell / GRUCell or a StackedRNNCells of them, ConvLSTM1D / 2D / 3D, and Bidirectional over
// any of these: one ONNX RNN / LSTM / GRU operator per cell (recurrent_op.h), cell
// k reading cell k-1's sequence, or ConvLSTM's Scan of convolutions (conv_lstm_op.h). Sequences go
// time-major through the ops and back; a mask on the input (Masking, Embedding mask_zero) makes
// each cell a Scan that keeps the states at masked steps, as Keras does. A stateful layer's
// states are graph inputs and outputs (stateful.h).
#include <limits>

#include "backend/errors.h"
#include "keras/export/conv_lstm_op.h"
#include "keras/export/emitter.h"
#include "keras/export/recurrent_op.h"
#include "keras/export/stateful.h"
#include "layers/rnn.h"

namespace keras::onnx {
namespace {

std::string where_of(const EmitCall& c) { return c.layer.where() + " ONNX export"; }

std::string reverse_time(Graph& g, const std::string& y, const std::string& hint) {
  return g.add("Slice", {y, g.constant_ints(hint + "_start", {-1}),
                         g.constant_ints(hint + "_end", {std::numeric_limits<int64_t>::min()}),
                         g.constant_ints(hint + "_axis", {0}), g.constant_ints(hint + "_step", {-1})},
               {}, hint);
}

// A Keras (N, T) bool mask as (T, N, 1), the layout of the Scan's per-step slices.
std::string time_major_mask(Graph& g, const std::string& mask, const std::string& hint) {
  const std::string m = g.add("Unsqueeze", {mask, g.constant_ints(hint + "_axis", {-1})}, {}, hint + "_3d");
  return g.add("Transpose", {m}, {attr("perm", std::vector<int64_t>{1, 0, 2})}, hint);
}

// Where a layer's steps live inside the graph. Vectors (N, units) keep Keras's layout; images
// (ConvLSTM) run channels-first, ONNX Conv's layout, whatever the layer's data_format.
struct StepLayout {
  int spatial = 0;              // 0: vectors; else the images' spatial axes
  bool keras_channels_first = false;  // data_format "channels_first": Keras's layout is ONNX's
  bool transposed() const { return spatial > 0 && !keras_channels_first; }
  // (N, T, ...) in Keras's layout -> (T, N, ...) in the ops' layout, and (T, N, ...) -> (N, T, ...).
  std::vector<int64_t> to_time_major() const {
    std::vector<int64_t> p{1, 0};
    if (transposed()) p.push_back(2 + spatial);
    for (int64_t a = 2; a < 2 + spatial + (transposed() ? 0 : 1); ++a) p.push_back(a);
    return p;
  }
  std::vector<int64_t> to_batch_major() const {
    std::vector<int64_t> p{1, 0};
    for (int64_t a = transposed() ? 3 : 2; a < 3 + spatial; ++a) p.push_back(a);
    if (transposed()) p.push_back(2);
    return p;
  }
  // A state in the ops' layout from a Value.
  std::string state_in(Graph& g, const Value& v) const { return transposed() ? g.as_channels_first(v) : g.as_keras(v); }
};

// The layer's cells run over `run` (cell k reading cell k-1's sequence): ONNX recurrent operators,
// or ConvLSTM's Scan of convolutions.
SequenceResult run_cells(Graph& g, const EmitCall& c, const layers::RNNImpl& rnn, SequenceRun run, const Shape& step,
                         std::vector<std::string>& final_states) {
  const std::vector<std::string> initial = run.initial;
  if (rnn.cell()->class_name() == "ConvLSTMCell") {
    SequenceResult r = emit_conv_lstm_sequence(g, *rnn.cell(), run, step, c.layer.name(), c.layer.where());
    final_states = r.states;
    return r;
  }
  const std::vector<OnnxCell> cells = onnx_cells(c.layer, where_of(c));
  SequenceResult r;
  size_t first_state = 0;
  for (size_t k = 0; k < cells.size(); ++k) {
    run.initial.clear();
    if (!initial.empty())
      run.initial.assign(initial.begin() + static_cast<std::ptrdiff_t>(first_state),
                         initial.begin() + static_cast<std::ptrdiff_t>(first_state + cells[k].state_count()));
    first_state += cells[k].state_count();
    r = emit_cell_sequence(g, cells[k], run, cells.size() == 1 ? c.layer.name() : c.hint("cell" + std::to_string(k)),
                           where_of(c));
    final_states.insert(final_states.end(), r.states.begin(), r.states.end());
    run.x = r.sequence;  // the next cell reads this one's outputs, in time order
  }
  return r;
}

// `time_order`: a go_backwards sequence comes back in time order (Bidirectional's backward half)
// instead of Keras's processing order.
std::vector<Value> emit_recurrent(Graph& g, const EmitCall& c, bool time_order = false) {
  const json& cfg = c.config;
  const auto* rnn = dynamic_cast<const layers::RNNImpl*>(&c.layer);
  if (!rnn) fail<NotImplementedError>(where_of(c), "a recurrent layer (SimpleRNN, LSTM, GRU, RNN or ConvLSTM)", c.layer.class_name());
  const Value& x = c.inputs[0];
  StepLayout layout;
  layout.spatial = x.rank() - 3;
  layout.keras_channels_first = rnn->cell()->get_config().value("data_format", "channels_last") == "channels_first";
  Shape keras_step = x.shape;  // one step's input in Keras's layout, (N, features) or an image
  keras_step.erase(keras_step.begin() + 1);
  std::vector<Shape> state_shapes = rnn->cell()->state_shapes(keras_step);
  Shape step = keras_step;  // the same in the ops' layout
  if (layout.transposed()) {
    step.insert(step.begin() + 1, step.back());
    step.pop_back();
  }
  // initial_state (by keyword): every cell's states in cell order, in Keras's layout. A stateful
  // layer without them starts from the states the caller feeds (stateful.h).
  std::vector<Value> given;
  for (size_t k = 0; k < c.keywords.size(); ++k) {
    if (c.keywords[k] != "initial_state")
      fail<NotImplementedError>(where_of(c), "keyword tensors initial_state only", "'" + c.keywords[k] + "'");
    given.push_back(c.inputs[c.inputs.size() - c.keywords.size() + k]);
  }
  const bool carried = rnn->sequence_args().stateful && given.empty();
  if (carried) given = stateful_inputs(g, *rnn, state_shapes, where_of(c));
  if (!given.empty() && given.size() != state_shapes.size())
    fail<ValueError>(where_of(c), std::to_string(state_shapes.size()) + " initial state tensors", std::to_string(given.size()));
  SequenceRun run;
  for (const auto& v : given) run.initial.push_back(layout.state_in(g, v));
  run.x = g.add("Transpose", {g.as_keras(x)}, {attr("perm", layout.to_time_major())}, c.hint("time_major"));
  if (!x.mask.empty()) run.mask = time_major_mask(g, x.mask, c.hint("mask_time_major"));
  run.backwards = cfg.value("go_backwards", false);
  run.zero_output_for_mask = cfg.value("zero_output_for_mask", false);
  std::vector<std::string> final_states;
  const SequenceResult r = run_cells(g, c, *rnn, run, step, final_states);
  std::vector<Value> states;
  for (size_t k = 0; k < final_states.size(); ++k)
    states.push_back(Value{final_states[k], state_shapes.at(k), DType::float32, layout.transposed()});
  if (carried) stateful_outputs(g, *rnn, states);
  std::vector<Value> result;
  if (cfg.value("return_sequences", false)) {
    // go_backwards returns the steps in processing order (reversed).
    std::string y = r.sequence;
    if (run.backwards && !time_order) y = reverse_time(g, y, c.hint("reversed"));
    result.push_back(c.output(g.add("Transpose", {y}, {attr("perm", layout.to_batch_major())}, c.hint("batch_major"))));
  } else {
    result.push_back(c.output(r.last, layout.transposed()));
  }
  if (cfg.value("return_state", false)) result.insert(result.end(), states.begin(), states.end());
  return result;
}

// Bidirectional: both halves as their own ops (the backward one's sequence in time order), then
// merged as merge_mode says; states: the forward ones, then the backward ones.
std::vector<Value> emit_bidirectional(Graph& g, const EmitCall& c) {
  std::vector<LayerPtr> halves = c.layer.sublayers();
  // merge_mode None is null in the config: two outputs.
  const json& mode = c.config.contains("merge_mode") ? c.config["merge_mode"] : json("concat");
  const std::string merge = mode.is_null() ? "" : mode.get<std::string>();
  // initial_state by keyword: the forward layer's states, then the backward layer's.
  const size_t n_keywords = c.keywords.size(), positional = c.inputs.size() - n_keywords;
  if (n_keywords % 2 != 0)
    fail<ValueError>(where_of(c), "initial states of both directions (an even count)", std::to_string(n_keywords));
  std::vector<std::vector<Value>> outs;
  for (size_t h = 0; h < halves.size(); ++h) {
    const LayerPtr& half = halves[h];
    const json cfg = half->get_config();
    std::vector<TensorSpec> specs;
    for (const Shape& s : half->compute_output_shape({c.inputs[0].shape})) specs.push_back({s});
    std::vector<Value> inputs(c.inputs.begin(), c.inputs.begin() + static_cast<std::ptrdiff_t>(positional));
    const size_t per_half = n_keywords / 2;
    for (size_t k = 0; k < per_half; ++k) inputs.push_back(c.inputs[positional + h * per_half + k]);
    EmitCall sub{*half, cfg, inputs, specs};
    sub.keywords.assign(per_half, "initial_state");
    outs.push_back(emit_recurrent(g, sub, true));
  }
  std::vector<Value> result;
  if (merge.empty()) {
    result = {outs[0][0], outs[1][0]};
  } else {
    const std::string a = g.as_keras(outs[0][0]), b = g.as_keras(outs[1][0]);
    std::string y;
    if (merge == "concat") y = g.add("Concat", {a, b}, {attr("axis", int64_t{-1})}, c.hint("concat"));
    else if (merge == "sum") y = g.add("Add", {a, b}, {}, c.hint("sum"));
    else if (merge == "mul") y = g.add("Mul", {a, b}, {}, c.hint("mul"));
    else if (merge == "ave")
      y = g.add("Mul", {g.add("Add", {a, b}, {}, c.hint("sum")), g.constant_scalar(c.hint("half"), 0.5f)}, {}, c.hint("ave"));
    else fail<NotImplementedError>(where_of(c), "merge_mode concat, sum, mul, ave or None", "'" + merge + "'");
    result.push_back(c.output(y));
  }
  for (const auto& half : outs)
    for (size_t k = 1; k < half.size(); ++k) result.push_back(half[k]);
  for (size_t i = 0; i < result.size(); ++i) result[i].shape = c.outputs.at(i).shape;
  return result;
}

std::vector<Value> emit_layer(Graph& g, const EmitCall& c) { return emit_recurrent(g, c); }

KERAS_REGISTER_ONNX_EMITTER("Bidirectional", emit_bidirectional);
KERAS_REGISTER_ONNX_EMITTER("SimpleRNN", emit_layer);
KERAS_REGISTER_ONNX_EMITTER("LSTM", emit_layer);
KERAS_REGISTER_ONNX_EMITTER("GRU", emit_layer);
KERAS_REGISTER_ONNX_EMITTER("RNN", emit_layer);
KERAS_REGISTER_ONNX_EMITTER("ConvLSTM1D", emit_layer);
KERAS_REGISTER_ONNX_EMITTER("ConvLSTM2D", emit_layer);
KERAS_REGISTER_ONNX_EMITTER("ConvLSTM3D", emit_layer);

}  // namespace
}  // namespace keras::onnx
