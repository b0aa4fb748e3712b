// KerasTensor: a symbolic tensor of the functional API. It carries a shape (-1 for the batch or
// any unknown extent), a dtype and its history: the layer call that produced it.
#pragma once
#include <memory>
#include <string>

#include "backend/shape.h"
#include "backend/dtype.h"

namespace keras {

class Layer;

struct KerasTensor {
  Shape shape;
  DType dtype = DType::float32;
  std::shared_ptr<Layer> layer;  // producing layer
  int node_index = 0;            // which call of that layer
  int tensor_index = 0;          // which output of that call

  int rank() const { return static_cast<int>(shape.size()); }
  // "KerasTensor(shape=(None, 784), dtype=float32, produced by 'input_layer')"
  std::string str() const;
};

}  // namespace keras
