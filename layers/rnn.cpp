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
  if (s.size() != 3 || s[2] < 1)
    fail<ShapeError>(where(), "sequences of shape (batch, time, features) with known features", "shape " + shape_str(s));
  if (built() && s[2] != build_input_shapes()[0][2])
    fail<ShapeError>(where(), "sequences with " + std::to_string(build_input_shapes()[0][2]) + " features",
                     "shape " + shape_str(s), "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
}

void RNNImpl::build(const std::vector<Shape>& shapes) {
  cell_->update_paths(prefix_ + name() + "/");
  if (!cell_->built()) cell_->ensure_built({{shapes[0][0], shapes[0][2]}});
}

std::vector<Shape> RNNImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const int64_t batch = shapes[0][0], units = cell_->output_size();
  std::vector<Shape> out{args_.return_sequences ? Shape{batch, shapes[0][1], units} : Shape{batch, units}};
  if (args_.return_state)
    for (int64_t n : cell_->state_size()) out.push_back({batch, n});
  return out;
}

TensorList RNNImpl::compute_mask(const TensorList&, const TensorList& masks) const {
  TensorList out{args_.return_sequences && !masks.empty() ? masks[0] : Tensor()};
  if (args_.return_state) out.resize(1 + cell_->state_size().size());
  return out;
}

TensorList RNNImpl::initial_states_for(const TensorList& given, int64_t batch) {
  const auto sizes = cell_->state_size();
  if (!given.empty()) {
    if (given.size() != sizes.size())
      fail<ValueError>(where() + " initial_state", std::to_string(sizes.size()) + " state tensor(s)",
                       std::to_string(given.size()));
    for (size_t i = 0; i < sizes.size(); ++i)
      if (given[i].shape() != Shape{batch, sizes[i]})
        fail<ShapeError>(where() + " initial_state[" + std::to_string(i) + "]",
                         "shape (" + std::to_string(batch) + ", " + std::to_string(sizes[i]) + ")", shape_str(given[i].shape()));
    return given;
  }
  if (!args_.stateful) return cell_->initial_state(batch);
  if (states_.empty()) states_ = cell_->initial_state(batch);
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
  TensorList states = initial_states_for(ctx.keyword(inputs, "initial_state"), x.shape()[0]);
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
    keep = mask.dtype() == DType::boolean ? mask : ops::not_equal(mask, Tensor::zeros(mask.shape(), mask.dtype()));
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
  Tensor previous = Tensor::zeros({batch, cell_->output_size()});
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = args_.go_backwards ? steps - 1 - k : k;
    auto [output, next] = cell_->step(time_step(x, t), states, training);
    if (keep.defined()) {
      Tensor m = ops::reshape(ops::slice(keep, {0, t}, {batch, 1}), {batch, 1});
      output = ops::where(m, output, args_.zero_output_for_mask ? Tensor::zeros(output.shape()) : previous);
      for (size_t i = 0; i < next.size(); ++i) next[i] = ops::where(m, next[i], states[i]);
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
  for (auto& s : states_) s = Tensor::zeros(s.shape());
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
