// Saved calls of a layer, read back for model_from_config (keras/saving/detail/call_nodes.h).
#include "keras/saving/detail/call_nodes.h"

#include <algorithm>

#include "keras/saving/detail/node_kwargs.h"
#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::detail {
namespace {

std::string brief(const json& j) {
  std::string s = j.dump();
  return s.size() > 160 ? s.substr(0, 160) + "..." : s;
}

bool is_keras_tensor(const json& j) { return j.is_object() && j.value("class_name", "") == "__keras_tensor__"; }

// tf_keras: a tensor in kwargs is [layer, node, tensor].
bool is_legacy_ref(const json& j) {
  return j.is_array() && j.size() == 3 && j[0].is_string() && j[1].is_number_integer() && j[2].is_number_integer();
}

bool holds_tensor(const json& v, bool legacy) {
  if (legacy ? is_legacy_ref(v) : is_keras_tensor(v)) return true;
  if (!v.is_array() && !(v.is_object() && !v.contains("class_name"))) return false;
  return std::any_of(v.begin(), v.end(), [&](const json& x) { return holds_tensor(x, legacy); });
}

// The tensors of a Keras 3 value, in Keras's flatten order (lists in order, dicts by sorted key).
void collect_tensor_refs(const json& j, std::vector<Ref>& out, const std::string& where) {
  if (j.is_null()) return;
  if (is_keras_tensor(j)) {
    if (!j.contains("config") || !j["config"].is_object() || !j["config"].contains("keras_history"))
      fail<ValueError>(where, "a __keras_tensor__ with config.keras_history", brief(j));
    out.push_back(parse_ref(j["config"]["keras_history"], where + " keras_history"));
  } else if (j.is_array() || (j.is_object() && !j.contains("class_name"))) {
    for (const auto& v : j) collect_tensor_refs(v, out, where);
  } else {
    fail<NotImplementedError>(where, "only symbolic tensors as call arguments", brief(j),
                              "Constant or lambda arguments cannot be replayed.");
  }
}

// The same for a tf_keras kwargs value: a reference, or lists of them.
void collect_legacy_refs(const json& j, std::vector<Ref>& out, const std::string& where) {
  if (j.is_null()) return;
  if (is_legacy_ref(j)) {
    out.push_back(parse_ref(j, where));
  } else if (j.is_array()) {
    for (const auto& v : j) collect_legacy_refs(v, out, where);
  } else {
    fail<NotImplementedError>(where, "only tensor references in a tensor argument", brief(j),
                              "Constant arguments mixed with tensors cannot be replayed.");
  }
}

bool declares(const KerasSignature& s, const std::string& key) {
  auto has = [&](const std::vector<std::string>& names) { return std::find(names.begin(), names.end(), key) != names.end(); };
  return has(s.tensor_parameters) || has(s.call_keywords);
}

std::string replayable(const std::string& class_name, const KerasSignature& s) {
  std::string names;
  for (const auto* list : {&s.tensor_parameters, &s.call_keywords})
    for (const auto& n : *list) names += ", '" + n + "'";
  if (names.empty()) return "only the call argument 'training'";
  return "'training' or an argument " + class_name + ".call declares (" + names.substr(2) + ")";
}

// A node's kwargs: `training`, then every declared argument, tensors as keywords (in sorted key
// order, Keras's flatten order) and values as options; Nones are call defaults.
void read_kwargs(const json& kwargs, const std::string& class_name, bool legacy, const std::set<std::string>& mask_ops,
                 NodeSpec& spec, std::vector<Ref>& keyword_refs, const std::string& where) {
  if (kwargs.is_null()) return;
  if (!kwargs.is_object()) fail<ValueError>(where, "a kwargs object", brief(kwargs));
  const KerasSignature& signature = keras_signature(class_name);
  for (const auto& [k, v] : kwargs.items()) {
    if (holds_no_tensor(v)) continue;
    if (k == "training" && v.is_boolean()) {
      spec.args.training = v.get<bool>();
      continue;
    }
    const std::string w = where + " '" + k + "'";
    if (k == "mask" && !legacy) {
      std::vector<Ref> refs;
      collect_tensor_refs(v, refs, w);
      if (std::all_of(refs.begin(), refs.end(), [&](const Ref& r) { return mask_ops.count(r.layer) > 0; })) continue;
    }
    if (!declares(signature, k))
      fail<NotImplementedError>(w, replayable(class_name, signature), brief(v),
                                "This framework cannot replay that call argument.");
    if (!holds_tensor(v, legacy)) {
      spec.args.options[k] = v;
      continue;
    }
    std::vector<Ref> refs;
    legacy ? collect_legacy_refs(v, refs, w) : collect_tensor_refs(v, refs, w);
    for (const auto& r : refs) {
      keyword_refs.push_back(r);
      spec.args.keywords.push_back(k);
    }
  }
}

// tf_keras RNN layers: the first argument's extra tensors are the legacy list keyword's.
void unfold_legacy_list(const KerasSignature& signature, std::vector<Ref>& positional, NodeSpec& spec,
                        std::vector<Ref>& keyword_refs) {
  if (signature.legacy_list_keyword.empty() || positional.size() < 2) return;
  keyword_refs.insert(keyword_refs.begin(), positional.begin() + 1, positional.end());
  spec.args.keywords.insert(spec.args.keywords.begin(), positional.size() - 1, signature.legacy_list_keyword);
  positional.resize(1);
}

// A keyword naming the next tensor parameter is passed positionally, as Python binds it.
void bind_tensor_parameters(const KerasSignature& signature, std::vector<Ref>& positional, NodeSpec& spec,
                            std::vector<Ref>& keyword_refs) {
  auto& keywords = spec.args.keywords;
  while (positional.size() < signature.tensor_parameters.size()) {
    const std::string& name = signature.tensor_parameters[positional.size()];
    if (std::count(keywords.begin(), keywords.end(), name) != 1) return;
    const auto at = std::find(keywords.begin(), keywords.end(), name) - keywords.begin();
    positional.push_back(keyword_refs[static_cast<size_t>(at)]);
    keyword_refs.erase(keyword_refs.begin() + at);
    keywords.erase(keywords.begin() + at);
  }
}

// Names of the layers whose outputs `j` references; a Keras 3 node's `mask` kwarg is left out.
void referenced_layers(const json& j, std::set<std::string>& out) {
  if (is_keras_tensor(j)) {
    const json& h = j.value("config", json::object()).value("keras_history", json());
    if (h.is_array() && !h.empty() && h[0].is_string()) out.insert(h[0].get<std::string>());
  } else if (j.is_array() && j.size() >= 3 && j[0].is_string() && j[1].is_number_integer()) {
    out.insert(j[0].get<std::string>());  // [layer, node, tensor(, kwargs)]
    if (j.size() > 3) referenced_layers(j[3], out);
  } else if (j.is_object() && j.contains("args") && j.contains("kwargs") && j["kwargs"].is_object()) {
    referenced_layers(j["args"], out);
    for (const auto& [k, v] : j["kwargs"].items())
      if (k != "mask") referenced_layers(v, out);
  } else if (j.is_array() || j.is_object()) {
    for (const auto& v : j) referenced_layers(v, out);
  }
}

std::string entry_name(const json& e) {
  if (e.contains("name") && e["name"].is_string()) return e["name"].get<std::string>();
  const json& c = e.value("config", json());
  return c.is_object() && c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "";
}

bool is_operation(const json& e) {
  if (!e.is_object() || !e.contains("class_name") || !e["class_name"].is_string()) return false;
  if (e.contains("module")) return e["module"].is_string() && e["module"].get<std::string>().starts_with("keras.src.ops.");
  // Keras 3's legacy .h5 writes no module: a class no layer registers, or one a layer shares (the
  // Concatenate operation of Concatenate's mask) whose config lacks the "trainable" every layer
  // config holds (SpatialDropout2D's aside, which Keras writes without it).
  const json nodes = e.value("inbound_nodes", json::array());
  if (nodes.empty() || !nodes[0].is_object()) return false;
  const std::string cls = e["class_name"].get<std::string>();
  if (!is_layer_registered(cls)) return true;
  const json config = e.value("config", json::object());
  return config.is_object() && !config.contains("trainable") && cls != "SpatialDropout2D";
}

}  // namespace

std::set<std::string> mask_operations(const json& config) {
  std::set<std::string> skipped;
  if (!config.is_object() || !config.contains("layers") || !config["layers"].is_array()) return skipped;
  for (;;) {  // grows: an operation only skipped operations use is skipped next round
    std::set<std::string> used;
    for (const char* key : {"input_layers", "output_layers"}) referenced_layers(config.value(key, json()), used);
    for (const auto& e : config["layers"])
      if (e.is_object() && !skipped.count(entry_name(e))) referenced_layers(e.value("inbound_nodes", json()), used);
    std::set<std::string> next;
    for (const auto& e : config["layers"])
      if (is_operation(e) && !used.count(entry_name(e))) next.insert(entry_name(e));
    if (next == skipped) return skipped;
    skipped = std::move(next);
  }
}

Ref parse_ref(const json& r, const std::string& where) {
  if (!r.is_array() || r.size() < 3 || !r[0].is_string() || !r[1].is_number_integer() || !r[2].is_number_integer())
    fail<ValueError>(where, "a [layer_name, node_index, tensor_index] reference", brief(r));
  return {r[0].get<std::string>(), r[1].get<int>(), r[2].get<int>()};
}

NodeSpec parse_node(const json& n, const std::string& class_name, const std::set<std::string>& mask_ops,
                    const std::string& where) {
  NodeSpec spec;
  spec.where = where;
  std::vector<Ref> positional, keyword_refs;
  if (n.is_array()) {  // tf_keras: [[layer, node, tensor, kwargs], ...], the same kwargs on each
    spec.legacy = true;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string w = where + "[" + std::to_string(i) + "]";
      positional.push_back(parse_ref(n[i], w));
      if (n[i].size() <= 3) continue;
      if (i == 0) {
        read_kwargs(n[i][3], class_name, true, mask_ops, spec, keyword_refs, w + " kwargs");
      } else if (n[i][3].is_object() && n[i][3].contains("training") && n[i][3]["training"].is_boolean()) {
        spec.args.training = n[i][3]["training"].get<bool>();
      }
    }
    unfold_legacy_list(keras_signature(class_name), positional, spec, keyword_refs);
  } else if (n.is_object() && n.contains("args")) {
    collect_tensor_refs(n["args"], positional, where + " args");
    if (n.contains("kwargs"))
      read_kwargs(n["kwargs"], class_name, false, mask_ops, spec, keyword_refs, where + " kwargs");
  } else {
    fail<ValueError>(where, "a node {\"args\", \"kwargs\"} or a list of [layer, node, tensor, kwargs]", brief(n));
  }
  bind_tensor_parameters(keras_signature(class_name), positional, spec, keyword_refs);
  spec.inputs = std::move(positional);
  spec.inputs.insert(spec.inputs.end(), keyword_refs.begin(), keyword_refs.end());
  if (spec.inputs.empty()) fail<ValueError>(where, "a call on at least one tensor", brief(n));
  return spec;
}

}  // namespace keras::detail
