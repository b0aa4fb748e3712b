// Internal: Keras 3 operation nodes and tf_keras TFOpLambda layers inside Functional configs, read
// by model_from_config, written by serialize_model (Keras 3 form) and to_keras2 (TFOpLambda form).
//
// Keras 3 (keras/src/models/functional.py): {"module": "keras.src.ops.numpy", "class_name": "Add",
//   "config": {"name": "add"}, "registered_name": "Add", "name": "add", "inbound_nodes":
//   [{"args": [<__keras_tensor__>, 3.0], "kwargs": {}}]}; no build_config. Keras 3's legacy .h5
//   writes the same entry without "module" and "registered_name" (and cannot read it back).
// tf_keras (tf_keras/src/layers/core/tf_op_layer.py, engine/node.py): {"class_name": "TFOpLambda",
//   "config": {"name": "tf.__operators__.add", "trainable": true, "dtype": "float32",
//   "function": "__operators__.add"}, "inbound_nodes": [[<first argument>, {"y": <second>,
//   "name": null}]]}: each node is the first argument itself (not a list of them, as for other
//   layers), [layer, node, tensor, kwargs] or ["_CONSTANT_VALUE", -1, value, kwargs]; the other
//   arguments are kwargs, a tensor there as [layer, node, tensor].
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layers/op_layer.h"

namespace keras::detail {

using json = nlohmann::json;

// True for a Functional layer entry that is a Keras 3 operation node or a TFOpLambda layer.
bool is_operation_entry(const json& entry);

struct OperationEntry {
  LayerPtr layer;                        // an OpLayer with its keras_call()
  std::vector<std::vector<json>> calls;  // per inbound node, the [layer, node, tensor] of its tensors in input order
  bool legacy = false;                   // tf_keras node references (nested models count from 1)
};
// Reads an entry is_operation_entry accepts. TypeError for an unknown operation or function,
// ValueError for a malformed node, NotImplementedError for call arguments that cannot be replayed
// or calls with differing constants; each naming `where`.
OperationEntry read_operation_entry(const json& entry, const std::string& where);

// Keras 3 form of an OpLayer with a keras_call(): the entry object (no name, inbound_nodes) and
// the "args" of one call on `tensors` (__keras_tensor__ objects, in input order).
json operation_object(const layers::OpLayerImpl& layer);
json operation_node_args(const layers::KerasOperationCall& call, const std::vector<json>& tensors);

// Keras 2 form of a Keras 3 operation entry: {"class_name": "TFOpLambda", "config"} and one node,
// with each keras_history turned into a legacy reference by `legacy_ref`.
json operation_entry_keras2(const json& entry, const std::string& where);
json operation_node_keras2(const json& entry, const json& node, const std::function<json(const json&)>& legacy_ref,
                           const std::string& where);

}  // namespace keras::detail
