// Model configs: the architecture of a Functional or Sequential model as Keras JSON, in the two
// schemas Keras uses (keras-formats.md §4), and rebuilding a model from either.
//
//   json k3 = keras::serialize_model(model);      // Keras 3 object (config.json, to_json)
//   json k2 = keras::to_keras2(k3);               // Keras 2 schema (legacy .h5 model_config)
//   auto rebuilt = keras::model_from_config(k2);  // reads both (and every variant listed below)
//
// Only the architecture travels: weights, compile_config and files are elsewhere. Nothing read
// from a config can run code: every class must be in the layer registry (layers/layer_registry.h),
// where "Functional", "Model" and "Sequential" are registered too, so nested models rebuild through
// layer_from_config.
//
// Node indices (settled against Keras 3.15 and tf_keras 2.21): a layer's node index counts only its
// calls inside the saved graph. Keras 3 `keras_history` uses that index as is; Keras 3
// input_layers/output_layers add 1 for a nested Functional (not a Sequential). Keras 2 node lists
// and input/output layers add 1 for every nested model (its node 0 is its own internal node).
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "keras/models/model.h"

namespace keras {

using json = nlohmann::json;

// The Keras 3 object of a Functional (module "keras.src.models.functional", registered_name
// "Functional") or Sequential (module "keras") model: {"module", "class_name", "config",
// "registered_name", "build_config"}; every layer inside is a Keras 3 object (built-ins: module
// "keras.layers", registered_name null; custom classes registered with a package:
// registered_name "package>Class"), layer dtypes are DTypePolicy objects, functional layer entries
// carry "name" and "inbound_nodes" ({"args", "kwargs"} with __keras_tensor__ entries). As Keras
// 3.15 writes it (layers/keras_signature.h): a "build_config" only for a built layer whose Keras
// class is not built at construction, node kwargs with the call defaults Keras records (Dropout's
// "training": false, BatchNormalization's "mask": null, a nested model's "mask"), and a nested
// model's "compile_config" ({} until compiled).
// A call that passed tensors by keyword or options (CallArgs keywords/options) records them in its
// kwargs as Keras 3 does: {"args": [<x>], "kwargs": {"initial_state": [<h>, <c>], "scale": 2.0}}
// (no call defaults then: Keras converts such calls); several positional tensors are separate args
// when the class declares them (KerasSignature tensor_parameters: MultiHeadAttention(q, v)), one
// list argument otherwise (Add()([a, b])). keras/saving/detail/node_kwargs.h.
// A model subclass is written as its registered class (custom object) when it is registered.
// An OpLayer read from a Keras 3 operation node or a TFOpLambda is written as Keras 3's operation
// node ({"module": "keras.src.ops.numpy", "class_name": "Add", "config": {"name"}, ...} with its
// constants among the node's args; keras/saving/detail/operation_nodes.h).
// Throws NotImplementedError for a layer that cannot be serialized (other OpLayers: keras ops on
// KerasTensors), TypeError for a class not in the layer registry (a subclassed model, an
// unregistered custom layer). An unbuilt Sequential is written without InputLayer and build
// shapes, as Keras does.
json serialize_model(const Model& model);

// The Keras 2 schema of a Keras 3 model object (what tf.keras writes into a legacy .h5
// `model_config`, readable by tf_keras 2.x and Keras 3): {"class_name", "config"} objects at every
// level (custom classes as class_name "package>Class"), no module/registered_name/build_config,
// dtype strings, InputLayer batch_input_shape, legacy node lists [[layer, node, tensor, kwargs]],
// class_name "Functional", Sequential config {"name", "layers"}. Keras-3-only config keys are
// translated (LeakyReLU negative_slope -> alpha) or dropped when at their Keras 2 meaning (InputLayer
// optional, Dense quantization_config, BatchNormalization renorm*, the initializers' null
// input_axes/output_axes), and so are the call defaults Keras 3 records in node kwargs (tf_keras
// would honour them as given: Dropout's training=false would never drop out); Keras 3
// operation nodes become the TFOpLambda layers tf_keras writes (Add(x, 3.0) -> function
// "__operators__.add", node [x, 0, 0, {"y": 3.0, "name": null}]). Keyword tensors and options go
// into the kwargs of every entry, tensors as [layer, node, tensor], positional tensors after the
// first under their declared parameter names ({"value": ["embed", 0, 0]}), and a class's
// legacy_list_keyword tensors (RNN initial_state) into the node list after the input, as tf_keras
// writes them; NotImplementedError for a second positional tensor the class does not name.
// Keras 3 cannot read keyword tensors in Keras 2 nodes (tf_keras can).
// Throws ValueError naming the entry for a config that is not a Keras 3 model object or that
// Keras 2 cannot express (LayerNormalization rms_scaling=true, an initializer's input_axes).
// Known Keras limitation: Keras 3 misreads Keras 2 node lists that reference a nested model (it
// ignores the +1 offset), so an .h5 with nested models loads in tf_keras but not in Keras 3.
json to_keras2(const json& keras3_object);

// Rebuilds a model from a Keras 3 or Keras 2 object: class_name "Functional", "Model" or
// "Sequential" (or a registered custom model class); any module (keras.src.models.functional,
// keras.src.engine.functional, ...); Keras 3 nodes {"args","kwargs"} or legacy node lists; bare
// triples, lists or dicts (sorted by key, as Keras flattens them) in input_layers/output_layers;
// InputLayer batch_shape or batch_input_shape; a Keras 2 Sequential whose first layer carries
// batch_input_shape; a bare-list Sequential config (Keras <= 2.2); dtype strings or policy
// objects; nested models; layers shared at different depths (rebuilt with a worklist); Keras 3
// operation nodes (also without module, as Keras 3's legacy .h5 writes them) and tf_keras
// TFOpLambda layers for the operations of layers/keras_operation.h, as OpLayers. Weights
// are fresh (initializers); copy weights separately. A Keras 3 node's recorded call default
// (Dropout's training=false, a mask of None) is not replayed; explicit arguments are, and every
// `training` of a Keras 2 node list (tf_keras records only what the caller passed). Keyword
// tensors and options of either schema are replayed when the class declares them (KerasSignature
// tensor_parameters / call_keywords; keras/saving/detail/call_nodes.h), and Keras 3's recorded
// masks (a `mask` kwarg computed by operation entries such as NotEqual) are not: masks propagate
// here by themselves, and those operation entries are not rebuilt.
// Throws TypeError for an unknown class (naming it and listing the registered ones), ValueError
// naming the JSON entry for a config of the wrong schema (not an object, missing layers, a node
// naming an unknown layer, a bad node/tensor index, an unresolvable graph), NotImplementedError
// for call arguments this framework cannot replay (undeclared keyword arguments, masks other than
// recorded ones, lambdas, constants outside operations),
// TypeError naming an unsupported operation or TFOpLambda function and its layer. Shape errors of
// the rebuilt graph propagate from the layers.
std::shared_ptr<Model> model_from_config(const json& object);

// Keras 3 `model.to_json()`: the serialize_model object as text (Keras 3 adds no keras_version
// or backend keys). `indent` < 0 writes one line.
std::string to_json(const Model& model, int indent = -1);

// `keras.models.model_from_json`: parses `text` and calls model_from_config. Throws ValueError
// naming the byte position on a JSON parse error.
std::shared_ptr<Model> model_from_json(const std::string& text);

namespace model_config_detail {
// Functional/Sequential configs (the inner "config" of the object); used by the registry
// factories of "Functional", "Model" and "Sequential".
std::shared_ptr<Model> functional_from_config(const json& config);
std::shared_ptr<Model> sequential_from_config(const json& config);
// True for the class names of Keras models in either schema.
bool is_model_class(const std::string& class_name);
}  // namespace model_config_detail

}  // namespace keras
