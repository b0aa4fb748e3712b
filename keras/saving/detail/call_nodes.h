// Internal: one saved call of a layer in a Functional config, read back into what the layer call
// needs (input references, CallArgs with keywords and options), for both schemas:
//
// Keras 3 (keras/src/models/functional.py serialize_node): {"args": [...], "kwargs": {...}} with
//   symbolic tensors as {"class_name": "__keras_tensor__", "config": {"shape", "dtype",
//   "keras_history": [layer, node, tensor]}} anywhere inside: MultiHeadAttention(q, v,
//   use_causal_mask=True) -> {"args": [<q>, <v>], "kwargs": {"use_causal_mask": true}};
//   LSTM(x, initial_state=[h, c]) -> {"args": [<x>], "kwargs": {"initial_state": [<h>, <c>]}}.
// tf_keras (tf_keras/src/engine/node.py Node.serialize): a list with one entry per tensor of the
//   first argument, [layer, node, tensor, kwargs], every entry carrying the same kwargs, where the
//   other positional arguments appear under their parameter names and tensors as
//   [layer, node, tensor]: [["dec", 0, 0, {"value": ["dec", 0, 0], "use_causal_mask": true}]].
//   Its RNN layers put initial_state into the first argument: [["e",0,0,{}], ["enc",0,1,{}], ...].
//
// What the class declares (layers/keras_signature.h: tensor_parameters, call_keywords,
// legacy_list_keyword) decides which keyword arguments are replayed and how they are normalised,
// so that both files give the same call: a keyword naming the next tensor parameter becomes a
// positional input; a legacy list's extra tensors become the legacy list keyword.
//
// Masks: Keras 3 records the mask Layer.__call__ gathered from the inputs as an explicit `mask`
// kwarg, a tensor of the operations that computed it (Embedding(mask_zero)'s NotEqual, written
// into the config as operation entries). This framework propagates masks by itself
// (Tensor::keras_mask), so such recorded masks are not replayed and those operations not rebuilt.
#pragma once
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layers/layer.h"

namespace keras::detail {

using json = nlohmann::json;

// A reference to one output of one call: [layer, node, tensor].
struct Ref {
  std::string layer;
  int node = 0, tensor = 0;
};

// One call to replay: references of its inputs (positional first, then one per keyword of
// args.keywords, in order) and its arguments.
struct NodeSpec {
  std::vector<Ref> inputs;
  CallArgs args;
  bool legacy = false;  // read from a tf_keras node list (its node indices count nested models' own node)
  std::string where;
};

// A [layer_name, node_index, tensor_index] reference; ValueError naming `where` otherwise.
Ref parse_ref(const json& r, const std::string& where);

// The entries of a Functional config's `layers` that are operations (a Keras 3 ops module, or
// no module and an unregistered class, as Keras 3's legacy .h5 writes them) whose outputs only
// Keras 3 `mask` kwargs use, directly or through other such operations: recorded mask computations.
std::set<std::string> mask_operations(const json& functional_config);

// A saved call of a layer of Keras class `class_name`, in either schema. A Keras 3 `mask` whose
// tensors all come from `mask_ops` is dropped (recorded propagation). Throws ValueError for a
// node of the wrong shape, NotImplementedError (naming the argument) for a keyword argument the
// class does not declare, another mask or a constant argument: they cannot be replayed.
// `training` and arguments that hold no tensor (mask=None) are read as before: explicit training
// kept, Nones ignored.
NodeSpec parse_node(const json& node, const std::string& class_name, const std::set<std::string>& mask_ops,
                    const std::string& where);

}  // namespace keras::detail
