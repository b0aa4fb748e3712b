// Keras 3 operation nodes and tf_keras TFOpLambda layers in Functional configs (see
// keras/saving/detail/operation_nodes.h for both forms).
#include "keras/saving/detail/operation_nodes.h"

#include <optional>

#include "layers/keras_operation.h"

namespace keras::detail {
namespace {

using layers::KerasOperationCall;
using Arg = std::optional<double>;

constexpr const char* kConstant = "_CONSTANT_VALUE";  // tf_keras: a constant first argument

std::string brief(const json& j) {
  std::string s = j.dump();
  return s.size() > 160 ? s.substr(0, 160) + "..." : s;
}

bool is_keras_tensor(const json& j) { return j.is_object() && j.value("class_name", "") == "__keras_tensor__"; }

json keras_history(const json& t, const std::string& where) {
  if (!t.contains("config") || !t["config"].is_object() || !t["config"].contains("keras_history"))
    fail<ValueError>(where, "a __keras_tensor__ with config.keras_history", brief(t));
  return t["config"]["keras_history"];
}

bool is_legacy_ref(const json& j) { return j.is_array() && j.size() >= 3 && j[0].is_string(); }

std::string entry_name(const json& entry) {
  if (entry.contains("name") && entry["name"].is_string()) return entry["name"].get<std::string>();
  const json& c = entry["config"];
  return c.is_object() && c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "";
}

// One call of the operation: its arguments and the references of its tensors.
struct Call {
  std::vector<Arg> args;
  std::vector<json> refs;
};

// Keras 3: {"args": [tensor or number, ...], "kwargs": {}}.
Call keras3_call(const json& node, const std::string& where) {
  if (!node.is_object() || !node.contains("args") || !node["args"].is_array())
    fail<ValueError>(where, "a node {\"args\": [...], \"kwargs\": {...}}", brief(node));
  Call call;
  for (size_t i = 0; i < node["args"].size(); ++i) {
    const json& a = node["args"][i];
    const std::string w = where + " args[" + std::to_string(i) + "]";
    if (is_keras_tensor(a)) {
      call.args.push_back(std::nullopt);
      call.refs.push_back(keras_history(a, w));
    } else if (a.is_number()) {
      call.args.push_back(a.get<double>());
    } else {
      fail<NotImplementedError>(w, "a tensor or a number", brief(a), "Other operation arguments cannot be replayed.");
    }
  }
  if (node.contains("kwargs") && node["kwargs"].is_object())
    for (const auto& [k, v] : node["kwargs"].items())
      if (!v.is_null())
        fail<NotImplementedError>(where + " kwargs '" + k + "'", "no keyword arguments", brief(v),
                                  "This framework cannot replay that operation argument.");
  return call;
}

// tf_keras: the node is the first argument [layer, node, tensor, kwargs] (or a list holding just
// it); the second argument is kwargs "y"; "name" is dropped, as TFOpLambda drops it.
Call tf_op_lambda_call(const json& node, const std::string& where) {
  const json* first = &node;
  if (node.is_array() && !node.empty() && node[0].is_array()) {
    if (node.size() != 1)
      fail<NotImplementedError>(where, "one tensor as the first argument", brief(node),
                                "TFOpLambda calls on lists of tensors cannot be replayed.");
    first = &node[0];
  }
  const bool constant = is_legacy_ref(*first) && (*first)[0] == kConstant;
  const bool tensor = is_legacy_ref(*first) && !constant && (*first)[1].is_number_integer() && (*first)[2].is_number_integer();
  if (!constant && !tensor)
    fail<ValueError>(where, "[layer, node, tensor, kwargs] or [\"_CONSTANT_VALUE\", -1, value, kwargs]", brief(node));
  Call call;
  if (constant) {
    if (!(*first)[2].is_number())
      fail<NotImplementedError>(where, "a number as constant first argument", brief((*first)[2]));
    call.args.push_back((*first)[2].get<double>());
  } else {
    call.args.push_back(std::nullopt);
    call.refs.push_back(json::array({(*first)[0], (*first)[1], (*first)[2]}));
  }
  const json kwargs = first->size() > 3 ? (*first)[3] : json::object();
  if (!kwargs.is_object()) fail<ValueError>(where + " kwargs", "an object", brief(kwargs));
  for (const auto& [k, v] : kwargs.items()) {
    const std::string w = where + " kwargs '" + k + "'";
    if (k == "name") continue;
    if (k != "y") fail<NotImplementedError>(w, "only the argument 'y'", brief(v), "This framework cannot replay it.");
    if (v.is_number()) {
      call.args.push_back(v.get<double>());
    } else if (is_legacy_ref(v)) {
      call.args.push_back(std::nullopt);
      call.refs.push_back(json::array({v[0], v[1], v[2]}));
    } else {
      fail<NotImplementedError>(w, "a tensor reference or a number", brief(v));
    }
  }
  return call;
}

// The module of a Keras 3 operation entry: its own, or for an entry of Keras 3's legacy .h5
// (written without modules) the one of a supported operation class whose config is just {"name"}
// (an Operation's config; every Layer's, merge layers Add, Multiply... included, holds trainable
// and dtype too) and whose nodes are Keras 3 nodes. "" for anything else.
std::string operation_module(const json& entry) {
  if (entry.contains("module"))
    return entry["module"].is_string() && layers::is_keras_operation_module(entry["module"].get<std::string>())
               ? entry["module"].get<std::string>()
               : "";
  const json* config = entry.contains("config") ? &entry["config"] : nullptr;
  if (!config || !config->is_object() || config->size() != 1 || !config->contains("name")) return "";
  for (const auto& node : entry.value("inbound_nodes", json::array()))
    if (!node.is_object()) return "";  // Keras 2 node lists: a layer
  return layers::keras_operation_module(entry["class_name"].get<std::string>());
}

}  // namespace

bool is_operation_entry(const json& entry) {
  if (!entry.is_object() || !entry.contains("class_name") || !entry["class_name"].is_string()) return false;
  return entry["class_name"] == "TFOpLambda" || !operation_module(entry).empty();
}

OperationEntry read_operation_entry(const json& entry, const std::string& where) {
  const bool tf = entry["class_name"] == "TFOpLambda";
  const json& config = entry.contains("config") ? entry["config"] : json();
  if (!config.is_object()) fail<ValueError>(where + " 'config'", "an object", brief(config));
  std::string function;
  if (tf) {
    if (!config.contains("function") || !config["function"].is_string())
      fail<ValueError>(where + " 'config'", "a TFOpLambda 'function' name", brief(config));
    function = config["function"].get<std::string>();
  }
  const json nodes = entry.value("inbound_nodes", json::array());
  if (!nodes.is_array() || nodes.empty())
    fail<ValueError>(where + " 'inbound_nodes'", "the operation's call", brief(nodes));
  OperationEntry out;
  out.legacy = tf;
  std::optional<KerasOperationCall> first;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const std::string w = where + " inbound_nodes[" + std::to_string(n) + "]";
    Call call = tf ? tf_op_lambda_call(nodes[n], w) : keras3_call(nodes[n], w);
    KerasOperationCall kc = tf ? layers::keras_call_of_tf_function(function, call.args, where)
                               : KerasOperationCall{operation_module(entry), entry["class_name"].get<std::string>(),
                                                    call.args};
    if (first && !(*first == kc))
      fail<NotImplementedError>(w, "the constants of the first call", "other constants",
                                "An operation called with different constants cannot be replayed.");
    if (!first) first = kc;
    out.calls.push_back(std::move(call.refs));
  }
  out.layer = layers::keras_operation_layer(*first, entry_name(entry), where, tf ? "TFOpLambda" : "");
  return out;
}

json operation_object(const layers::OpLayerImpl& layer) {
  const KerasOperationCall& call = *layer.keras_call();
  return {{"module", call.module},
          {"class_name", call.class_name},
          {"config", layer.get_config()},
          {"registered_name", call.class_name}};
}

json operation_node_args(const KerasOperationCall& call, const std::vector<json>& tensors) {
  json args = json::array();
  size_t next = 0;
  for (const auto& a : call.args) args.push_back(a ? json(*a) : tensors.at(next++));
  return args;
}

json operation_entry_keras2(const json& entry, const std::string& where) {
  auto [function, arity] = layers::tf_function_of(operation_module(entry), entry["class_name"].get<std::string>(), where);
  return {{"class_name", "TFOpLambda"},
          {"config", {{"name", entry_name(entry)}, {"trainable", true}, {"dtype", "float32"}, {"function", function}}}};
}

json operation_node_keras2(const json& entry, const json& node, const std::function<json(const json&)>& legacy_ref,
                           const std::string& where) {
  Call call = keras3_call(node, where);
  auto [function, arity] = layers::tf_function_of(operation_module(entry), entry["class_name"].get<std::string>(), where);
  if (static_cast<int>(call.args.size()) != arity)
    fail<ValueError>(where, std::to_string(arity) + " argument(s)", std::to_string(call.args.size()));
  size_t next = 0;
  auto value = [&](const Arg& a) { return a ? json(*a) : legacy_ref(call.refs.at(next++)); };
  json first = value(call.args[0]);
  json kwargs = json::object();
  if (arity == 2) kwargs = {{"y", value(call.args[1])}, {"name", nullptr}};
  if (call.args[0]) first = json::array({kConstant, -1, first});
  first.push_back(std::move(kwargs));
  return first;
}

}  // namespace keras::detail
