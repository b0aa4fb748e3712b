// KerasTensor: a symbolic tensor of the functional API. It carries a shape (-1 for the batch or
// any unknown extent), a dtype and its history: the layer call that produced it.
//
// Ownership of the functional graph (stated here, once): every owning edge points upstream.
// A KerasTensor owns its producing layer and the node (the call) that made it; a node owns its
// input KerasTensors; a Model owns its graph through its input and output KerasTensors. A layer
// only observes its nodes (weak references), so a layer called at several depths, or a model
// called on its own output, forms no cycle, and a graph is freed with its last KerasTensor or Model.
#pragma once
#include <memory>
#include <string>

#include "backend/shape.h"
#include "backend/dtype.h"

namespace keras {

class Layer;
struct LayerNode;

struct KerasTensor {
  Shape shape;
  DType dtype = DType::float32;
  std::shared_ptr<Layer> layer;            // producing layer
  std::shared_ptr<const LayerNode> node;  // the call that produced it
  int node_index = 0;                      // which call of that layer
  int tensor_index = 0;          // which output of that call

  int rank() const { return static_cast<int>(shape.size()); }
  // "KerasTensor(shape=(None, 784), dtype=float32, produced by 'input_layer')"
  std::string str() const;
};

}  // namespace keras
