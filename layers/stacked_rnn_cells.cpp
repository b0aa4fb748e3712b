#include "layers/stacked_rnn_cells.h"

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

RNNCellPtr as_rnn_cell(const LayerPtr& layer, const std::string& where) {
  auto cell = std::dynamic_pointer_cast<RNNCell>(layer);
  if (!cell)
    fail<ValueError>(where, "an RNN cell (SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells)",
                     layer ? "a " + layer->class_name() : std::string("none"));
  return cell;
}

StackedRNNCellsImpl::StackedRNNCellsImpl(StackedRNNCellsOptions options) : RNNCell(config::base_options(options)) {
  if (options.cells.empty()) fail<ValueError>(where(), "at least one cell", "an empty list");
  for (const auto& c : options.cells) {
    cells_.push_back(as_rnn_cell(c, where() + " cells"));
    // Cells pass (batch, units) vectors to the next one and their states are (batch, n): an
    // image cell fits neither (Keras's StackedRNNCells cannot run one either).
    if (c->class_name() == "ConvLSTMCell")
      fail<ValueError>(where() + " cells", "cells whose steps are vectors (SimpleRNNCell, LSTMCell, GRUCell)",
                       c->where(), "Stack ConvLSTM1D/2D/3D layers with return_sequences=true instead.");
  }
  // Unnamed cells get distinct names (Keras's are unique per session), so weight paths differ.
  for (const auto& [key, layer] : config::container_keys("", sublayers()))
    if (!layer->has_name()) layer->set_name(key.substr(1));
}

std::vector<int64_t> StackedRNNCellsImpl::state_size() const {
  std::vector<int64_t> out;
  for (const auto& c : cells_)
    for (int64_t n : c->state_size()) out.push_back(n);
  return out;
}

void StackedRNNCellsImpl::build(const std::vector<Shape>& shapes) {
  Shape step = shapes[0];
  for (const auto& c : cells_) {
    c->update_paths(prefix_ + name() + "/");
    c->ensure_built({step});
    step = {step[0], c->output_size()};
  }
}

std::pair<Tensor, TensorList> StackedRNNCellsImpl::step(const Tensor& x, const TensorList& states, bool training) {
  Tensor out = x;
  TensorList new_states;
  size_t at = 0;
  for (const auto& c : cells_) {
    const size_t n = c->state_size().size();
    auto [o, s] = c->step(out, TensorList(states.begin() + at, states.begin() + at + n), training);
    out = o;
    new_states.insert(new_states.end(), s.begin(), s.end());
    at += n;
  }
  return {out, new_states};
}

void StackedRNNCellsImpl::reset_dropout_masks() {
  for (const auto& c : cells_) c->reset_dropout_masks();
}

std::vector<LayerPtr> StackedRNNCellsImpl::sublayers() const { return {cells_.begin(), cells_.end()}; }

std::vector<std::pair<std::string, LayerPtr>> StackedRNNCellsImpl::keyed_sublayers() const {
  return config::container_keys("cells", sublayers());
}

void StackedRNNCellsImpl::update_paths(const std::string& prefix) {
  Layer::update_paths(prefix);
  prefix_ = prefix;
  for (const auto& c : cells_) c->update_paths(prefix + name() + "/");
}

json StackedRNNCellsImpl::get_config() const {
  json c = base_config();
  c["cells"] = json::array();
  for (const auto& cell : cells_) c["cells"].push_back(config::serialize_nested_layer(*cell));
  return c;
}

KERAS_REGISTER_LAYER(StackedRNNCells, [](const json& c) -> LayerPtr {
  StackedRNNCellsOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("cells") || !c["cells"].is_array())
    fail<ValueError>("StackedRNNCells config", "a list 'cells'", c.contains("cells") ? c["cells"].dump() : "none");
  for (size_t i = 0; i < c["cells"].size(); ++i)
    o.cells.push_back(config::nested_layer_from_config(c["cells"][i], "StackedRNNCells config cells[" + std::to_string(i) + "]"));
  return std::make_shared<StackedRNNCellsImpl>(std::move(o));
});
KERAS_SIGNATURE(StackedRNNCells, .training_default = false);

}  // namespace keras::layers
