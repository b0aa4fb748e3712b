// Layers that hold other layers as Keras attributes (RNN.cell, Bidirectional.forward_layer,
// TimeDistributed.layer, StackedRNNCells.cells): how they serialize those layers into their
// config, rebuild them from it, and which keys Keras 3's weights file gives them.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace keras {

// A layer whose sublayers Keras 3 saves under attribute keys, not in a `layers` container:
// the weights tree (keras/saving/weights_h5.h) puts child i at "<path>/<key i>" ("cell",
// "forward_layer", "cells/lstm_cell"). Implemented next to Layer by such composites.
class KeyedSublayers {
 public:
  virtual ~KeyedSublayers() = default;
  virtual std::vector<std::pair<std::string, LayerPtr>> keyed_sublayers() const = 0;
};

namespace config {

// Keras 3's serialize_keras_object of a nested layer: {"module": "keras.layers", "class_name",
// "config" (dtype as a DTypePolicy object), "registered_name": null, "build_config" once built}.
json serialize_nested_layer(const Layer& layer);

// A layer from a nested config in any form config::unwrap_object accepts (Keras 2 or 3), through
// the layer registry, built for its build_config's input_shape when it has one (as Keras).
// ValueError/TypeError naming `where` for a malformed or unknown entry.
LayerPtr nested_layer_from_config(const json& j, const std::string& where);

// "cells/<snake_case class>", deduplicated as Keras's list containers do (lstm_cell, lstm_cell_1).
std::vector<std::pair<std::string, LayerPtr>> container_keys(const std::string& container,
                                                             const std::vector<LayerPtr>& layers);

}  // namespace config
}  // namespace keras
