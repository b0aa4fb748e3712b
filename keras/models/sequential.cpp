#include "keras/models/sequential.h"

namespace keras {

Sequential::Sequential(std::initializer_list<SequentialEntry> entries, const std::string& name) : Model(name) {
  for (const auto& e : entries) add(e);
}

Sequential::Sequential(const std::vector<LayerPtr>& entries, const std::string& name) : Model(name) {
  for (const auto& e : entries) add(e);
}

void Sequential::add(const SequentialEntry& entry) {
  if (!entry.layer) fail<ValueError>("Sequential '" + name() + "' add", "a layer", "an empty handle");
  if (auto input = std::dynamic_pointer_cast<layers::InputLayerImpl>(entry.layer)) {
    if (input_ || !stack_.empty())
      fail<ValueError>("Sequential '" + name() + "' add", "an InputLayer only as the first layer",
                       "one after " + std::to_string(stack_.size()) + " layer(s)");
    input_ = input;
    rebuild();
    return;
  }
  for (const auto& l : stack_)
    if (l == entry.layer)
      fail<ValueError>("Sequential '" + name() + "' add", "a layer not yet in the model", "'" + l->name() + "' again");
  stack_.push_back(entry.layer);
  if (input_ || has_graph()) rebuild();
}

void Sequential::pop() {
  if (stack_.empty()) fail<ValueError>("Sequential '" + name() + "' pop", "a non-empty model", "no layers");
  stack_.pop_back();
  if (input_ || has_graph()) rebuild();
}

std::vector<LayerPtr> Sequential::layers() const {
  if (!has_graph()) return stack_;
  std::vector<LayerPtr> out;
  for (const auto& l : Model::layers())
    if (l->class_name() != "InputLayer") out.push_back(l);
  return out;
}

void Sequential::build_for(const Shape& input_shape) {
  if (!input_) {
    Shape feature(input_shape.begin() + (input_shape.empty() ? 0 : 1), input_shape.end());
    layers::InputOptions options;
    options.shape = feature;
    input_ = std::make_shared<layers::InputLayerImpl>(options);
  }
  rebuild();
}

void Sequential::rebuild() {
  if (!input_) return;
  KerasTensor x = input_->output();
  for (const auto& layer : stack_) x = (*layer)(x);
  set_graph({input_->output()}, {x});
}

void Sequential::ensure_graph(const std::vector<Shape>& input_shapes) {
  if (has_graph()) return;
  if (input_shapes.size() != 1)
    fail<ValueError>("Sequential '" + name() + "'", "one input", std::to_string(input_shapes.size()) + " inputs");
  if (stack_.empty()) fail<ValueError>("Sequential '" + name() + "'", "at least one layer", "none", "add() layers first.");
  build_for(input_shapes[0]);
}

}  // namespace keras
