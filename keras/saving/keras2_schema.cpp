// to_keras2: a Keras 3 model object rewritten in the plain Keras 2 schema (keras-formats.md §4a),
// the schema of legacy .h5 `model_config` that tf_keras 2.x and Keras 3 both read.
#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "keras/saving/detail/call_nodes.h"
#include "keras/saving/detail/keras2_values.h"
#include "keras/saving/detail/node_kwargs.h"
#include "keras/saving/detail/operation_nodes.h"
#include "keras/saving/model_config.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras {
namespace {

using model_config_detail::is_model_class;

bool is_keras3_object(const json& j) {
  return j.is_object() && j.contains("class_name") && j["class_name"].is_string() && j.contains("config") &&
         (j.contains("module") || j.contains("registered_name"));
}

// Keras 2 names a custom class by its registered name ("package>Class"). A Keras class that
// Keras 3 writes under its module (InceptionResNetV2's CustomScaleLayer) takes the name tf_keras
// registered it under ("Custom>CustomScaleLayer"), the only one tf_keras finds in a legacy .h5.
std::string keras2_class_name(const json& obj) {
  if (obj.contains("registered_name") && obj["registered_name"].is_string()) {
    std::string r = obj["registered_name"].get<std::string>();
    if (r.find('>') != std::string::npos) return r;
  }
  const std::string cls = obj["class_name"].get<std::string>();
  if (!registered_layer_module(cls).empty() && !registered_layer_name(cls).empty()) return registered_layer_name(cls);
  return cls;
}

// Keras 3.15's fan axes of the variance-scaling initializers, which tf_keras's do not accept:
// dropped at their default (None), refused otherwise.
json without_fan_axes(const json& obj) {
  json config = obj["config"];
  if (obj.value("module", json()) != "keras.initializers" || !config.is_object()) return config;
  for (const char* key : {"input_axes", "output_axes"}) {
    if (!config.contains(key)) continue;
    if (!config[key].is_null())
      fail<ValueError>("to_keras2: initializer " + obj["class_name"].get<std::string>() + " '" + key + "'",
                       "null (Keras 2 has no fan axes)", config[key].dump(), "Save this model as .keras instead.");
    config.erase(key);
  }
  return config;
}

json layer_config_keras2(const std::string& cls, const json& config, const std::string& where);

// A layer nested in another's config (RNN.cell, Bidirectional.layer, TimeDistributed.layer):
// tf_keras 2.21 itself writes these in the Keras 3 form (module, registered_name, build_config),
// and Keras 3 finds a nested built-in class in a legacy .h5 only by its module, so the object
// keeps that form; its config loses the Keras-3-only keys as a top-level layer's does.
bool is_nested_layer(const json& j) {
  return is_keras3_object(j) && j.value("module", json()) == "keras.layers" &&
         is_layer_registered(j["class_name"].get<std::string>());
}

}  // namespace

json keras2_values(const json& j) {
  if (is_nested_layer(j)) {
    const std::string cls = j["class_name"].get<std::string>();
    json out = j;
    out["config"] = layer_config_keras2(cls, j["config"], "to_keras2: nested " + cls);
    return out;
  }
  if (is_keras3_object(j)) return {{"class_name", keras2_class_name(j)}, {"config", keras2_values(without_fan_axes(j))}};
  if (j.is_array()) {
    json out = json::array();
    for (const auto& v : j) out.push_back(keras2_values(v));
    return out;
  }
  if (!j.is_object()) return j;
  json out = json::object();
  for (const auto& [k, v] : j.items()) out[k] = k == "dtype" && v.is_object() ? json(config::dtype_from_config(v)) : keras2_values(v);
  return out;
}

namespace {

// The image preprocessing layers' Keras-3-only keys, each with the value tf_keras 2.21 implies
// (it has channels_last images only, no padding/antialiasing in Resizing, and RandomContrast
// clips to [0, 255]): dropped at that value, refused at any other. The "rng_type" tf_keras's random
// layers add is not written: tf_keras defaults it, and Keras 3 refuses it in a legacy .h5.
const std::map<std::string, std::vector<std::pair<const char*, json>>>& keras3_only_image_keys() {
  static const json channels_last = "channels_last";
  static const std::map<std::string, std::vector<std::pair<const char*, json>>> keys = {
      {"Resizing",
       {{"data_format", channels_last},
        {"pad_to_aspect_ratio", false},
        {"fill_mode", "constant"},
        {"fill_value", 0.0},
        {"antialias", false}}},
      {"CenterCrop", {{"data_format", channels_last}}},
      {"RandomCrop", {{"data_format", channels_last}}},
      {"RandomFlip", {{"data_format", channels_last}}},
      {"RandomRotation", {{"data_format", channels_last}}},
      {"RandomZoom", {{"data_format", channels_last}}},
      {"RandomTranslation", {{"data_format", channels_last}}},
      {"RandomContrast", {{"data_format", channels_last}, {"value_range", json::array({0, 255})}}},
      {"RandomBrightness", {{"data_format", channels_last}}},
  };
  return keys;
}

void drop_keras3_only_image_keys(const std::string& cls, json& c, const std::string& where) {
  auto it = keras3_only_image_keys().find(cls);
  if (it == keras3_only_image_keys().end()) return;
  for (const auto& [key, implied] : it->second) {
    if (!c.contains(key)) continue;
    if (c[key] != implied)
      fail<ValueError>(where + " " + cls + " '" + key + "'", implied.dump() + " (the only value tf_keras has)",
                       c[key].dump(), "Save this model as .keras instead.");
    c.erase(key);
  }
}

// Keras-3-only keys tf_keras does not accept, translated or dropped at their Keras 2 meaning.
json layer_config_keras2(const std::string& cls, const json& config, const std::string& where) {
  json c = keras2_values(config);
  if (cls == "InputLayer") {
    if (c.contains("batch_shape")) {
      c["batch_input_shape"] = c["batch_shape"];
      c.erase("batch_shape");
    }
    if (!c.contains("ragged")) c["ragged"] = false;
    c.erase("optional");
  } else if (cls == "LeakyReLU" && c.contains("negative_slope")) {
    c["alpha"] = c["negative_slope"];
    c.erase("negative_slope");
  } else if (cls == "LayerNormalization" && c.contains("rms_scaling")) {
    if (c["rms_scaling"] == true)
      fail<ValueError>(where + " 'rms_scaling'", "false (Keras 2 has no RMS scaling)", "true",
                       "Save this model as .keras instead.");
    c.erase("rms_scaling");
  } else if (cls == "ConvLSTM1D" || cls == "ConvLSTM2D" || cls == "ConvLSTM3D") {
    c.erase("seed");  // tf_keras's ConvLSTM layers refuse it (it seeds their dropout masks only)
  } else if (cls == "BatchNormalization" && c.value("renorm", json(false)) == false) {
    // tf_keras writes the renorm keys only for renorm=True.
    for (const char* key : {"renorm", "renorm_clipping", "renorm_momentum"}) c.erase(key);
  }
  drop_keras3_only_image_keys(cls, c, where);
  if (c.contains("quantization_config") && c["quantization_config"].is_null()) c.erase("quantization_config");
  return c;
}

json model_keras2(const json& obj, const std::string& where);

// tf_keras's MultiHeadAttention builds from the query/key/value shapes in its config (its
// from_config), where Keras 3 keeps them in build_config's shapes_dict; it has no gate, sliding
// window or seed.
void attention_shapes_keras2(const json& entry, json& c, const std::string& where) {
  for (const char* key : {"use_gate", "sliding_window"})
    if (c.contains(key) && !c[key].is_null() && c[key] != false)
      fail<ValueError>(where + " MultiHeadAttention '" + key + "'", "its default (tf_keras has none)", c[key].dump(),
                       "Save this model as .keras instead.");
  for (const char* key : {"use_gate", "sliding_window", "seed"}) c.erase(key);
  c["softmax_robust_masking"] = false;
  const json build = entry.value("build_config", json::object());
  const json shapes = build.is_object() ? build.value("shapes_dict", json::object()) : json::object();
  c["query_shape"] = shapes.value("query_shape", json(nullptr));
  c["value_shape"] = shapes.value("value_shape", json(nullptr));
  c["key_shape"] = shapes.value("key_shape", c["value_shape"]);
}

// A layer entry of a Functional or Sequential config (nested models recurse).
json entry_keras2(const json& entry, const std::string& where) {
  if (!entry.is_object() || !entry.contains("class_name") || !entry["class_name"].is_string() ||
      !entry.contains("config"))
    fail<ValueError>(where, "a layer object {\"class_name\", \"config\", ...}", entry.dump().substr(0, 200));
  const std::string cls = entry["class_name"].get<std::string>();
  if (is_model_class(cls) && entry["config"].is_object() && entry["config"].contains("layers"))
    return model_keras2(entry, where);
  json config = layer_config_keras2(cls, entry["config"], where);
  if (cls == "MultiHeadAttention") attention_shapes_keras2(entry, config, where);
  return {{"class_name", keras2_class_name(entry)}, {"config", std::move(config)}};
}

// Collects the __keras_tensor__ entries of a Keras 3 node's args, in call order.
void collect_tensors(const json& j, std::vector<json>& out, const std::string& where) {
  if (j.is_object() && j.value("class_name", "") == "__keras_tensor__") {
    out.push_back(j);
  } else if (j.is_array() || j.is_object()) {
    for (const auto& v : j) collect_tensors(v, out, where);
  } else {
    fail<NotImplementedError>(where, "only tensors as call arguments", j.dump(), "Keras 2 nodes hold tensors only.");
  }
}

class FunctionalKeras2 {
 public:
  FunctionalKeras2(const json& config, std::string where)
      : config_(config), where_(std::move(where)), mask_ops_(detail::mask_operations(config)) {
    for (const auto& e : config_["layers"])
      if (e.is_object() && e.contains("name") && e.contains("class_name"))
        class_of_[e["name"].get<std::string>()] = e["class_name"].get<std::string>();
  }

  json write() const {
    json layers = json::array();
    for (size_t i = 0; i < config_["layers"].size(); ++i) {
      const json& e = config_["layers"][i];
      std::string w = where_ + " layers[" + std::to_string(i) + "]";
      // Keras 3's recorded mask computations: tf_keras computes masks itself, as this framework does.
      if (e.contains("name") && e["name"].is_string() && mask_ops_.count(e["name"].get<std::string>())) continue;
      // A Keras 3 operation becomes the TFOpLambda layer tf_keras writes for the same arithmetic.
      const bool op = detail::is_operation_entry(e) && e["class_name"] != "TFOpLambda";
      json out = op ? detail::operation_entry_keras2(e, w) : entry_keras2(e, w);
      out["name"] = e.contains("name") ? e["name"] : e["config"].value("name", json(nullptr));
      out["inbound_nodes"] = json::array();
      const json nodes = e.value("inbound_nodes", json::array());
      auto ref = [&](const json& h) { return legacy_ref(h); };
      for (size_t n = 0; n < nodes.size(); ++n) {
        std::string wn = w + " inbound_nodes[" + std::to_string(n) + "]";
        out["inbound_nodes"].push_back(op ? detail::operation_node_keras2(e, nodes[n], ref, wn)
                                          : node(e["class_name"].get<std::string>(), nodes[n], wn));
      }
      layers.push_back(std::move(out));
    }
    json c = {{"name", config_.value("name", json("functional"))},
              {"trainable", config_.value("trainable", true)},
              {"layers", std::move(layers)},
              {"input_layers", io_refs(config_.at("input_layers"), where_ + " input_layers")},
              {"output_layers", io_refs(config_.at("output_layers"), where_ + " output_layers")}};
    return c;
  }

 private:
  bool is_nested_model(const std::string& name) const {
    auto it = class_of_.find(name);
    return it != class_of_.end() && is_model_class(it->second);
  }

  // Keras 2 counts a nested model's first call as node 1 (node 0 is the model's own). Keras 2
  // records only the arguments a caller passed, and honours them: the call defaults Keras 3
  // records (Dropout's training=false, a mask of None) are left out. tf_keras's node is its first
  // argument's tensors, each with the same kwargs: the other positional arguments under their
  // parameter names, tensors as [layer, node, tensor] (keras/saving/detail/call_nodes.h).
  json node(const std::string& cls, const json& n, const std::string& where) const {
    if (n.is_array()) return n;  // already a legacy node list
    if (!n.is_object() || !n.contains("args") || !n["args"].is_array())
      fail<ValueError>(where, "a node {\"args\", \"kwargs\"}", n.dump().substr(0, 200));
    const KerasSignature& signature = keras_signature(registered_class(cls));
    json kwargs = json::object();
    if (n.contains("kwargs") && n["kwargs"].is_object())
      for (const auto& [k, v] : n["kwargs"].items())
        if (!v.is_null() && !detail::is_call_default(cls, k, v) && !(k == "mask" && recorded_mask(v)))
          kwargs[k] = keras2_argument(v);
    const json& args = n["args"];
    json first;
    if (!args.empty()) {
      first = args[0];
    } else if (!signature.tensor_parameters.empty() && kwargs.contains(signature.tensor_parameters[0])) {
      first = n["kwargs"][signature.tensor_parameters[0]];  // MultiHeadAttention(query=q, value=v)
      kwargs.erase(signature.tensor_parameters[0]);
    }
    for (size_t i = 1; i < args.size(); ++i) {
      if (i >= signature.tensor_parameters.size())
        fail<NotImplementedError>(where + " args[" + std::to_string(i) + "]",
                                  "a parameter name for positional argument " + std::to_string(i) + " of " + cls +
                                      " (KerasSignature tensor_parameters)",
                                  "none", "Keras 2 nodes name every argument after the first.");
      kwargs[signature.tensor_parameters[i]] = keras2_argument(args[i]);
    }
    std::vector<json> tensors;
    collect_tensors(first, tensors, where + " args");
    // tf_keras's RNN layers carry initial_state in the first argument, after the inputs.
    const std::string& folded = signature.legacy_list_keyword;
    if (!folded.empty() && kwargs.contains(folded) && n["kwargs"].contains(folded)) {
      collect_tensors(n["kwargs"][folded], tensors, where + " kwargs '" + folded + "'");
      kwargs.erase(folded);
    }
    if (tensors.empty()) fail<ValueError>(where, "a call on at least one tensor", n.dump().substr(0, 200));
    json out = json::array();
    for (const auto& t : tensors) {
      json r = legacy_ref(t["config"].at("keras_history"));
      r.push_back(kwargs);
      out.push_back(std::move(r));
    }
    return out;
  }

  // A mask computed by Keras 3's recorded mask operations (detail/call_nodes.h), Nones aside.
  bool recorded_mask(const json& v) const {
    if (v.is_null()) return true;
    if (v.is_object() && v.value("class_name", "") == "__keras_tensor__")
      return mask_ops_.count(v["config"].at("keras_history").at(0).get<std::string>()) > 0;
    return v.is_array() && std::all_of(v.begin(), v.end(), [&](const json& x) { return recorded_mask(x); });
  }

  // A Keras 3 argument value with its tensors as Keras 2 references.
  json keras2_argument(const json& v) const {
    if (v.is_object() && v.value("class_name", "") == "__keras_tensor__") return legacy_ref(v["config"].at("keras_history"));
    if (!v.is_array() && !v.is_object()) return v;
    json out = v;
    for (auto& x : out) x = keras2_argument(x);
    return out;
  }

  // The C++ class of a Keras 2 class name ("package>Class" for custom classes).
  static std::string registered_class(const std::string& cls) {
    const auto sep = cls.find('>');
    return sep == std::string::npos ? cls : cls.substr(sep + 1);
  }

  // A Keras 3 keras_history [layer, node, tensor] as a Keras 2 reference.
  json legacy_ref(const json& h) const {
    std::string name = h.at(0).get<std::string>();
    int index = h.at(1).get<int>() + (is_nested_model(name) ? 1 : 0);
    return json::array({name, index, h.at(2)});
  }

  // Keras 3 already adds 1 for a nested Functional here, but not for a nested Sequential.
  json io_ref(const json& r, const std::string& where) const {
    if (!r.is_array() || r.size() != 3 || !r[0].is_string() || !r[1].is_number_integer())
      fail<ValueError>(where, "a [layer, node, tensor] triple", r.dump());
    std::string name = r[0].get<std::string>();
    bool sequential = class_of_.count(name) && class_of_.at(name) == "Sequential";
    return json::array({name, r[1].get<int>() + (sequential && !legacy() ? 1 : 0), r[2]});
  }

  json io_refs(const json& refs, const std::string& where) const {
    json out = json::array();
    if (refs.is_array() && !refs.empty() && refs[0].is_string()) {
      out.push_back(io_ref(refs, where));
    } else if (refs.is_array() || refs.is_object()) {  // list, or dict flattened by sorted key
      for (const auto& r : refs) out.push_back(io_ref(r, where));
    } else {
      fail<ValueError>(where, "a triple or a list of triples", refs.dump());
    }
    return out;
  }

  bool legacy() const {
    for (const auto& e : config_["layers"])
      for (const auto& n : e.value("inbound_nodes", json::array()))
        if (n.is_array()) return true;
    return false;
  }

  const json& config_;
  std::string where_;
  std::map<std::string, std::string> class_of_;
  std::set<std::string> mask_ops_;
};

json model_keras2(const json& obj, const std::string& where) {
  if (!obj.is_object() || !obj.contains("class_name") || !obj["class_name"].is_string())
    fail<ValueError>(where, "a model object {\"class_name\", \"config\"}", obj.dump().substr(0, 200));
  const std::string cls = obj["class_name"].get<std::string>();
  if (!is_model_class(cls)) return entry_keras2(obj, where);  // a registered custom model class
  const json& config = obj.contains("config") ? obj["config"] : json();
  const bool bare_list = cls == "Sequential" && config.is_array();
  if (!bare_list && (!config.is_object() || !config.contains("layers") || !config["layers"].is_array()))
    fail<ValueError>(where + " 'config'", "an object with a 'layers' list", config.dump().substr(0, 200));
  if (cls == "Sequential") {
    const json& entries = bare_list ? config : config["layers"];
    json layers = json::array();
    for (size_t i = 0; i < entries.size(); ++i)
      layers.push_back(entry_keras2(entries[i], where + " layers[" + std::to_string(i) + "]"));
    json c = {{"name", bare_list ? json("sequential") : config.value("name", json("sequential"))},
              {"layers", std::move(layers)}};
    // tf_keras ignores it; written only when it matters, so that a frozen Sequential stays frozen here.
    if (!bare_list && config.value("trainable", true) == false) c["trainable"] = false;
    return {{"class_name", "Sequential"}, {"config", std::move(c)}};
  }
  for (const char* key : {"input_layers", "output_layers"})
    if (!config.contains(key)) fail<ValueError>(where + " 'config'", std::string("a '") + key + "' entry", "none");
  return {{"class_name", "Functional"}, {"config", FunctionalKeras2(config, where).write()}};
}

}  // namespace

json to_keras2(const json& keras3_object) { return model_keras2(keras3_object, "to_keras2: model config"); }

}  // namespace keras
