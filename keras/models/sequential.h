// Sequential: a linear stack of layers (keras.Sequential). It becomes a functional graph as soon
// as its input shape is known — from a leading Input, or from the first data it sees — and then
// runs through Model's one execution path.
//
//   keras::Sequential model({keras::layers::Input({784}),
//                            keras::layers::Dense({.units = 10, .activation = "softmax"})});
#pragma once
#include <initializer_list>
#include <vector>

#include "keras/models/model.h"

namespace keras {

// An entry of the Sequential constructor: a layer handle, a LayerPtr, or an Input() tensor.
struct SequentialEntry {
  LayerPtr layer;
  SequentialEntry(LayerPtr l) : layer(std::move(l)) {}
  SequentialEntry(const KerasTensor& t) : layer(t.layer) {}
  template <class Handle>
    requires std::is_convertible_v<Handle, LayerPtr>
  SequentialEntry(const Handle& h) : layer(LayerPtr(h)) {}
};

class Sequential : public Model {
 public:
  explicit Sequential(std::initializer_list<SequentialEntry> layers = {}, const std::string& name = "");
  explicit Sequential(const std::vector<LayerPtr>& layers, const std::string& name = "");

  std::string class_name() const override { return "Sequential"; }
  // Appends a layer; an InputLayer is accepted only first. Rebuilds the graph if built.
  void add(const SequentialEntry& layer);
  // Removes the last layer (ValueError when empty).
  void pop();
  // The layers, without the InputLayer (as Keras).
  std::vector<LayerPtr> layers() const override;
  // Builds the graph for inputs of `input_shape` (batch axis included, may be -1).
  void build_for(const Shape& input_shape);

 protected:
  void ensure_graph(const std::vector<Shape>& input_shapes) override;

 private:
  void rebuild();
  std::vector<LayerPtr> stack_;  // without the InputLayer
  std::shared_ptr<layers::InputLayerImpl> input_;
};

}  // namespace keras
