#include "layers/rnn.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/stacked_rnn_cells.h"

namespace keras::layers {

namespace {

RNNCellPtr cell_of(const RNNOptions& o, const std::string& where) {
  if (o.cell && !o.cells.empty()) fail<ValueError>(where, "either `cell` or `cells`", "both");
  if (o.cells.size() == 1) return as_rnn_cell(o.cells[0], where + " cell");
  if (!o.cells.empty()) return std::make_shared<StackedRNNCellsImpl>(StackedRNNCellsOptions{.cells = o.cells});
  if (!o.cell) fail<ValueError>(where, "a cell", "none", "Pass RNNOptions::cell, e.g. LSTMCell({.units = 8}).");
  return as_rnn_cell(o.cell, where + " cell");
}

// The shape of one step of (batch, time, ...) sequences: (batch, ...).
Shape step_shape(const Shape& sequences) {
  Shape step = sequences;
  step.erase(step.begin() + 1);
  return step;
}

// Step t of (batch, time, ...) as (batch, ...).
Tensor time_step(const Tensor& x, int64_t t) {
  Shape begin(x.rank(), 0), size = x.shape(), step = x.shape();
  begin[1] = t;
  size[1] = 1;
  step.erase(step.begin() + 1);
  return ops::reshape(ops::slice(x, begin, size), step);
}

}  // namespace

RNNImpl::RNNImpl(RNNOptions o)
    : RNNImpl(config::base_options(o), cell_of(o, o.name.empty() ? std::string("RNN") : "Layer '" + o.name + "' (RNN)"),
              sequence_args_of(o)) {}

RNNImpl::RNNImpl(const LayerOptions& base, RNNCellPtr cell, SequenceArgs args)
    : Layer(base), cell_(std::move(cell)), args_(args) {}

void RNNImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.empty()) fail<ShapeError>(where(), "a sequence input", "no inputs");
  const Shape& s = shapes[0];
  const int rank = 2 + cell_->step_rank();
  if (static_cast<int>(s.size()) != rank || cell_->step_features(step_shape(s)) < 1)
    fail<ShapeError>(where(),
                     rank == 3 ? std::string("sequences of shape (batch, time, features) with known features")
                               : "sequences of rank " + std::to_string(rank) + " with known channels",
                     "shape " + shape_str(s));
  if (!built()) return;
  const int64_t built_for = cell_->step_features(step_shape(build_input_shapes()[0]));
  if (cell_->step_features(step_shape(s)) != built_for)
    fail<ShapeError>(where(), "sequences with " + std::to_string(built_for) + (rank == 3 ? " features" : " channels"),
                     "shape " + shape_str(s), "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
}

void RNNImpl::build(const std::vector<Shape>& shapes) {
  cell_->update_paths(prefix_ + name() + "/");
  if (!cell_->built()) cell_->ensure_built({step_shape(shapes[0])});
}

std::vector<Shape> RNNImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const Shape step = step_shape(shapes[0]);
  Shape output = cell_->step_output_shape(step);
  if (args_.return_sequences) output.insert(output.begin() + 1, shapes[0][1]);
  std::vector<Shape> out{output};
  if (args_.return_state)
    for (const Shape& s : cell_->state_shapes(step)) out.push_back(s);
  return out;
}

TensorList RNNImpl::compute_mask(const TensorList&, const TensorList& masks) const {
  TensorList out{args_.return_sequences && !masks.empty() ? masks[0] : Tensor()};
  if (args_.return_state) out.resize(1 + cell_->state_size().size());
  return out;
}

TensorList RNNImpl::initial_states_for(const TensorList& given, const Shape& step, DType dtype) {
  const int64_t batch = step[0];
  const auto shapes = cell_->state_shapes(step);
  if (!given.empty()) {
    if (given.size() != shapes.size())
      fail<ValueError>(where() + " initial_state", std::to_string(shapes.size()) + " state tensor(s)",
                       std::to_string(given.size()));
    for (size_t i = 0; i < shapes.size(); ++i)
      if (given[i].shape() != shapes[i])
        fail<ShapeError>(where() + " initial_state[" + std::to_string(i) + "]", "shape " + shape_str(shapes[i]),
                         shape_str(given[i].shape()));
    return given;
  }
  if (!args_.stateful) return cell_->initial_state(step, dtype);
  if (states_.empty()) states_ = cell_->initial_state(step, dtype);
  if (states_[0].shape()[0] != batch)
    fail<ValueError>(where(), "batches of " + std::to_string(states_[0].shape()[0]) + " sequences (stateful)",
                     std::to_string(batch), "A stateful RNN keeps one state per batch entry: its first call fixes "
                                            "the batch size.");
  return states_;
}

TensorList RNNImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const size_t positional = ctx.positional_count(inputs.size());
  if (positional != 1)
    fail<ValueError>(where(), "one positional input (the sequences)", std::to_string(positional),
                     "Pass initial states by keyword: CallArgs{.keywords = {\"initial_state\", ...}}.");
  const Tensor& x = inputs[0];
  TensorList states = initial_states_for(ctx.keyword(inputs, "initial_state"), step_shape(x.shape()), x.dtype());
  SequenceResult r = run_sequence(x, states, ctx.mask(0), ctx.training);
  if (args_.stateful) {
    states_.clear();
    for (const auto& s : r.states) states_.push_back(s.detach());
  }
  TensorList out{args_.return_sequences ? r.sequence : r.last};
  if (args_.return_state) out.insert(out.end(), r.states.begin(), r.states.end());
  return out;
}

RNNImpl::SequenceResult RNNImpl::run_sequence(const Tensor& x, TensorList states, const Tensor& mask, bool training) {
  const int64_t batch = x.shape()[0], steps = x.shape()[1];
  if (steps < 1) fail<ShapeError>(where(), "at least one timestep", shape_str(x.shape()));
  Tensor keep;  // (batch, time) bool: which steps update the states
  if (mask.defined()) {
    if (mask.shape() != Shape{batch, steps})
      fail<ShapeError>(where() + " mask", "shape " + shape_str({batch, steps}), shape_str(mask.shape()));
    keep = mask.dtype() == DType::boolean ? mask : ops::not_equal(mask, Tensor::zeros(mask.shape(), mask.dtype(), mask.device()));
  }
  SequenceResult r;
  if (auto fused = cell_->fused_sequence(training)) {
    // One op for the whole sequence (oneDNN's RNN primitives where they apply): same semantics
    // as the loop below, one tape node instead of a few per timestep.
    fused->x = x;
    fused->initial_h = states[0];
    if (states.size() > 1) fused->initial_c = states[1];
    fused->mask = keep;
    fused->go_backwards = args_.go_backwards;
    fused->zero_output_for_mask = args_.zero_output_for_mask;
    TensorList out = ops::rnn_sequence(*fused);
    const int64_t units = cell_->output_size();
    // Masked: the last output may differ from h_T (zeros before a row's first real step).
    r.last = keep.defined()
                 ? ops::reshape(ops::slice(out[0], {0, steps - 1, 0}, {batch, 1, units}), {batch, units})
                 : out[1];
    if (args_.return_sequences) r.sequence = out[0];
    r.states.assign(out.begin() + 1, out.end());
    return r;
  }
  cell_->reset_dropout_masks();
  TensorList outputs;
  const Shape output_shape = cell_->step_output_shape(step_shape(x.shape()));
  Tensor previous = Tensor::zeros(output_shape, x.dtype(), x.device());
  Shape mask_shape(output_shape.size(), 1);  // (batch, 1, ...): broadcasts over a step's output
  mask_shape[0] = batch;
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = args_.go_backwards ? steps - 1 - k : k;
    auto [output, next] = cell_->step(time_step(x, t), states, training);
    if (keep.defined()) {
      Tensor m = ops::slice(keep, {0, t}, {batch, 1});
      Tensor m_out = ops::reshape(m, mask_shape);
      output = ops::where(m_out, output, args_.zero_output_for_mask ? Tensor::zeros(output.shape(), output.dtype(), output.device()) : previous);
      for (size_t i = 0; i < next.size(); ++i) {
        Shape state_mask(next[i].rank(), 1);
        state_mask[0] = batch;
        next[i] = ops::where(ops::reshape(m, state_mask), next[i], states[i]);
      }
    }
    states = std::move(next);
    previous = output;
    if (args_.return_sequences) outputs.push_back(ops::expand_dims(output, 1));
  }
  cell_->reset_dropout_masks();
  r.last = previous;
  if (args_.return_sequences) r.sequence = outputs.size() == 1 ? outputs[0] : ops::concatenate(outputs, 1);
  r.states = std::move(states);
  return r;
}

TensorList RNNImpl::call_with_state(const Tensor& sequences, const TensorList& states, CallArgs args) {
  args.keywords.assign(states.size(), "initial_state");
  TensorList inputs{sequences};
  inputs.insert(inputs.end(), states.begin(), states.end());
  return (*this)(inputs, args);
}

void RNNImpl::reset_states() {
  for (auto& s : states_) s = Tensor::zeros(s.shape(), s.dtype(), s.device());
}

void RNNImpl::update_paths(const std::string& prefix) {
  Layer::update_paths(prefix);
  prefix_ = prefix;
  cell_->update_paths(prefix + name() + "/");
}

json RNNImpl::sequence_config() const {
  json c = base_config();
  c["return_sequences"] = args_.return_sequences;
  c["return_state"] = args_.return_state;
  c["go_backwards"] = args_.go_backwards;
  c["stateful"] = args_.stateful;
  c["unroll"] = args_.unroll;
  c["zero_output_for_mask"] = args_.zero_output_for_mask;
  return c;
}

json RNNImpl::get_config() const {
  json c = sequence_config();
  c["cell"] = config::serialize_nested_layer(*cell_);
  return c;
}

json rnn_build_config(const Layer& layer) {
  const auto& shapes = layer.build_input_shapes();
  auto shape_json = [](const Shape& s) { return config::shape_to_json(s); };
  if (shapes.size() <= 1) return {{"input_shape", shapes.empty() ? json(nullptr) : shape_json(shapes[0])}};
  json states = json::array();
  for (size_t i = 1; i < shapes.size(); ++i) states.push_back(shape_json(shapes[i]));
  return {{"shapes_dict", {{"sequences_shape", shape_json(shapes[0])}, {"initial_state_shape", states}}}};
}

SequenceArgs sequence_args_from_config(const json& c) {
  SequenceArgs a;
  a.return_sequences = c.value("return_sequences", false);
  a.return_state = c.value("return_state", false);
  a.go_backwards = c.value("go_backwards", false);
  a.stateful = c.value("stateful", false);
  a.unroll = c.value("unroll", false);
  a.zero_output_for_mask = c.value("zero_output_for_mask", false);
  return a;
}

KERAS_REGISTER_LAYER(RNN, [](const json& c) -> LayerPtr {
  RNNOptions o;
  config::read_base_keys(c, o);
  set_sequence_args(sequence_args_from_config(c), o);
  if (!c.contains("cell")) fail<ValueError>("RNN config", "a 'cell'", "none");
  if (c["cell"].is_array()) {
    for (size_t i = 0; i < c["cell"].size(); ++i)
      o.cells.push_back(config::nested_layer_from_config(c["cell"][i], "RNN config cell[" + std::to_string(i) + "]"));
  } else {
    o.cell = config::nested_layer_from_config(c["cell"], "RNN config cell");
  }
  return std::make_shared<RNNImpl>(std::move(o));
});
KERAS_SIGNATURE(RNN, .training_default = false, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state", .build_config = &rnn_build_config);

}  // namespace keras::layers
