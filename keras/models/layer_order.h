// The order of a functional model's layers, as Keras computes it (keras/src/ops/function.py
// map_graph; tf_keras's _map_graph_network is the same). It is not cosmetic: legacy .h5 files pair
// weights with layers by position in this order, and Keras 3 .weights.h5 keys layers by class
// name deduplicated in this order, so a model whose layers are ordered otherwise loads weights into
// the wrong layers (ResNet50's shortcut convolutions).
#pragma once
#include <vector>

#include "layers/layer.h"

namespace keras::detail {

// Layers reachable from `outputs`, plus the InputLayers of unused `inputs`: sorted by depth
// (longest path to an output) from the inputs down, ties by the order a depth-first walk from the
// outputs (each node's inputs in keras_input_order) first meets them. Precondition: every tensor has a node
// (built by layer calls) and the graph is acyclic.
// The order in which Keras walks a node's input tensors (tree.flatten of (args, kwargs)): the
// positional inputs, then the keyword tensors by name (sorted, as Keras flattens a dict), each
// name's tensors in call order. Indices into node.inputs.
std::vector<size_t> keras_input_order(const LayerNode& node);

std::vector<LayerPtr> keras_layer_order(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs);

}  // namespace keras::detail
