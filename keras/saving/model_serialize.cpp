// serialize_model and to_json: a model's architecture as the Keras 3 object (keras-formats.md §4b).
#include <map>
#include <set>
#include <typeinfo>

#include "keras/saving/compile_config.h"
#include "keras/saving/detail/mask_nodes.h"
#include "keras/saving/detail/node_kwargs.h"
#include "keras/saving/detail/operation_nodes.h"
#include "keras/saving/model_config.h"
#include "keras/models/sequential.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/op_layer.h"

namespace keras {
namespace {

json dtype_policy(const std::string& name) { return config::keras_object("keras", "DTypePolicy", {{"name", name}}); }

bool is_exact_functional(const Layer& l) { return typeid(l) == typeid(Model); }
bool is_exact_sequential(const Layer& l) { return typeid(l) == typeid(Sequential); }

json build_shapes_json(const std::vector<Shape>& shapes) {
  if (shapes.size() == 1) return config::shape_to_json(shapes[0]);
  json out = json::array();
  for (const auto& s : shapes) out.push_back(config::shape_to_json(s));
  return out;
}

json serialize_layer(const Layer& layer);

// A layer inside a model. Keras's serialize_keras_object adds a model's compile config ({} until
// it is compiled).
json serialize_entry(const Layer& layer) {
  json obj = serialize_layer(layer);
  if (auto model = dynamic_cast<const Model*>(&layer)) {
    json compiled = saving::compile_config(*model);
    obj["compile_config"] = compiled.is_null() ? json::object() : std::move(compiled);
  }
  return obj;
}

// A layer that is not a Functional/Sequential model: its registered class and get_config().
json serialize_plain_layer(const Layer& layer) {
  const std::string cls = layer.class_name();
  if (auto op = dynamic_cast<const layers::OpLayerImpl*>(&layer); op && op->keras_call())
    return detail::operation_object(*op);  // a Keras 3 operation node (no build_config)
  if (cls == "OpLayer")
    fail<NotImplementedError>("serialize_model: " + layer.where(), "layers that can be saved",
                              "an OpLayer (keras ops or arithmetic on KerasTensors)",
                              "Use the merge layers (Add, Subtract, Multiply, ...) or a registered custom layer "
                              "for models you save.");
  if (dynamic_cast<const Model*>(&layer) && model_config_detail::is_model_class(cls))
    fail<TypeError>("serialize_model: " + layer.where(), "a functional or Sequential model, or a registered class",
                    "a subclassed model", "Build it with the functional API, or give it its own class_name() "
                    "and register it with keras::register_layer(class_name, factory, package).");
  if (!is_layer_registered(cls))
    fail<TypeError>("serialize_model: " + layer.where(), "a class in the layer registry", "'" + cls + "'",
                    "Register it with keras::register_layer(\"" + cls +
                        "\", factory, \"package\") so that the saved model can be loaded.");
  json config = layer.get_config();
  // Keras 3 writes layer dtypes as DTypePolicy objects; InputLayer and SpatialDropout2D (whose
  // get_config is its own: rate, seed, name, dtype) keep a plain dtype name.
  if (cls != "InputLayer" && cls != "SpatialDropout2D" && config.contains("dtype") && config["dtype"].is_string())
    config["dtype"] = dtype_policy(config["dtype"].get<std::string>());
  // Keras 3's SpatialDropout2D neither writes nor accepts `trainable` (it is weightless).
  if (cls == "SpatialDropout2D") config.erase("trainable");
  const std::string registered = registered_layer_name(cls);
  const std::string module = registered_layer_module(cls);
  json obj;
  if (!module.empty()) {
    // A Keras class outside keras.layers: Keras 3 imports `module` and names the class itself.
    obj = config::keras_object(module, cls, config);
    obj["registered_name"] = cls;
  } else if (registered.empty()) {
    obj = config::keras_object("keras.layers", cls, config);
  } else {
    // Keras writes the Python module; the package is the closest thing a C++ class has.
    obj = config::keras_object(registered.substr(0, registered.find('>')), cls, config);
    obj["registered_name"] = registered;
  }
  // Keras records the shapes its build() wrapper saw; a class built at construction has none.
  if (layer.built() && !keras_signature(cls).built_at_init)
    obj["build_config"] = keras_signature(cls).build_config
                              ? keras_signature(cls).build_config(layer)
                              : json{{"input_shape", build_shapes_json(layer.build_input_shapes())}};
  return obj;
}

// The calls of a model's graph, by layer and node index: every call reachable backwards from the
// outputs (and the inputs).
using GraphNodes = std::map<const Layer*, std::map<int, std::shared_ptr<const LayerNode>>>;
GraphNodes graph_nodes(const Model& model) {
  GraphNodes nodes;
  std::vector<KerasTensor> stack(model.outputs().begin(), model.outputs().end());
  stack.insert(stack.end(), model.inputs().begin(), model.inputs().end());  // inputs the outputs ignore
  while (!stack.empty()) {
    KerasTensor t = stack.back();
    stack.pop_back();
    if (!nodes[t.layer.get()].emplace(t.node_index, t.node).second) continue;
    for (const auto& in : t.node->inputs) stack.push_back(in);
  }
  return nodes;
}

class FunctionalWriter {
 public:
  explicit FunctionalWriter(const Model& model) : model_(model), nodes_(graph_nodes(model)) {}

  json write() const {
    const std::vector<LayerPtr> all = model_.layers();
    std::set<std::string> names;
    for (const auto& l : all) names.insert(l->name());
    // The operations that compute recorded masks follow the layer whose mask they compute.
    detail::MaskNodes masks([&](const KerasTensor& t) { return keras_tensor(t); }, std::move(names));
    std::vector<json> entries;
    for (const auto& l : all) {
      json entry = serialize_entry(*l);
      entry["name"] = l->name();
      entry["inbound_nodes"] = json::array();
      for (const auto& [index, node] : nodes_.at(l.get())) {
        if (node->inputs.empty()) continue;  // an InputLayer's own node
        entry["inbound_nodes"].push_back(write_node(*l, *node, masks));
      }
      entries.push_back(std::move(entry));
    }
    const auto operations = masks.entries();
    json layers = json::array();
    for (size_t i = 0; i < entries.size(); ++i) {
      layers.push_back(std::move(entries[i]));
      if (auto it = operations.find(all[i].get()); it != operations.end())
        for (const auto& op : it->second) layers.push_back(op);
    }
    json config = {{"name", model_.name()}, {"trainable", model_.trainable()}, {"layers", std::move(layers)},
                   {"input_layers", refs(model_.inputs())}, {"output_layers", refs(model_.outputs())}};
    return {{"module", "keras.src.models.functional"}, {"class_name", "Functional"}, {"config", std::move(config)},
            {"registered_name", "Functional"}, {"build_config", {{"input_shape", nullptr}}}};
  }

 private:
  // A node's index among the calls of its layer inside this graph.
  int relative_index(const KerasTensor& t) const {
    const auto& own = nodes_.at(t.layer.get());
    return static_cast<int>(std::distance(own.begin(), own.find(t.node_index)));
  }

  json keras_tensor(const KerasTensor& t) const {
    return {{"class_name", "__keras_tensor__"},
            {"config",
             {{"shape", config::shape_to_json(t.shape)},
              {"dtype", dtype_name(t.dtype)},
              {"keras_history", {t.layer->name(), relative_index(t), t.tensor_index}}}}};
  }

  // A Keras operation takes its tensors and constants as positional arguments (Add(x, 3.0));
  // a layer's call is written by detail::keras3_node.
  json write_node(const Layer& layer, const LayerNode& node, detail::MaskNodes& masks) const {
    auto op = dynamic_cast<const layers::OpLayerImpl*>(&layer);
    if (!op || !op->keras_call())
      return detail::keras3_node(layer, node, [&](const KerasTensor& t) { return keras_tensor(t); },
                                 [&](const KerasTensor& t) { return masks.mask_of(t); });
    std::vector<json> tensors;
    for (const auto& t : node.inputs) tensors.push_back(keras_tensor(t));
    json kwargs = json::object();
    if (node.args.training) kwargs["training"] = *node.args.training;
    return {{"args", detail::operation_node_args(*op->keras_call(), tensors)}, {"kwargs", std::move(kwargs)}};
  }

  // Keras 3 counts a nested Functional's first call as node 1 here (not in keras_history).
  json ref(const KerasTensor& t) const {
    int offset = is_exact_functional(*t.layer) ? 1 : 0;
    return json::array({t.layer->name(), relative_index(t) + offset, t.tensor_index});
  }

  json refs(const std::vector<KerasTensor>& ts) const {
    if (ts.size() == 1) return ref(ts[0]);
    json out = json::array();
    for (const auto& t : ts) out.push_back(ref(t));
    return out;
  }

  const Model& model_;
  GraphNodes nodes_;
};

json serialize_sequential(const Sequential& model) {
  json layers = json::array();
  json config = {{"name", model.name()}, {"trainable", model.trainable()}, {"dtype", dtype_policy("float32")}};
  json build_config;
  if (model.built()) {
    const KerasTensor& input = model.inputs().at(0);
    layers.push_back(serialize_layer(*input.layer));
    config["build_input_shape"] = config::shape_to_json(input.shape);
    build_config = {{"input_shape", config::shape_to_json(input.shape)}};
  }
  for (const auto& l : model.layers()) layers.push_back(serialize_entry(*l));
  config["layers"] = std::move(layers);
  json obj = config::keras_object("keras", "Sequential", config);
  if (!build_config.is_null()) obj["build_config"] = std::move(build_config);
  return obj;
}

json serialize_layer(const Layer& layer) {
  if (is_exact_sequential(layer)) return serialize_sequential(static_cast<const Sequential&>(layer));
  if (is_exact_functional(layer)) return FunctionalWriter(static_cast<const Model&>(layer)).write();
  return serialize_plain_layer(layer);
}

}  // namespace

json serialize_model(const Model& model) { return serialize_layer(model); }

std::string to_json(const Model& model, int indent) { return serialize_model(model).dump(indent); }

}  // namespace keras
