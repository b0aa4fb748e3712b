// model_from_config / model_from_json: rebuilding a Functional or Sequential model from a Keras 3 or
// Keras 2 config (keras-formats.md §4). Functional graphs are replayed with a worklist: all layers
// are created first, then each layer's calls run, in order, as soon as their inputs exist (shared
// layers may be called at different depths).
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <typeinfo>

#include "keras/saving/detail/call_nodes.h"
#include "keras/saving/detail/node_kwargs.h"
#include "keras/saving/detail/operation_nodes.h"
#include "keras/saving/model_config.h"
#include "keras/models/sequential.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras {

namespace model_config_detail {
bool is_model_class(const std::string& c) { return c == "Functional" || c == "Model" || c == "Sequential"; }
}  // namespace model_config_detail

namespace {

using model_config_detail::is_model_class;

std::string brief(const json& j) {
  std::string s = j.dump();
  return s.size() > 160 ? s.substr(0, 160) + "..." : s;
}

std::shared_ptr<Model> functional_at(const json& config, const std::string& where);
std::shared_ptr<Model> sequential_at(const json& config, const std::string& where, const json& build_config);

// A layer (or nested model) from its entry {"class_name", "config", ["registered_name"], ...}.
LayerPtr layer_from_entry(const json& entry, const std::string& where) {
  if (!entry.is_object() || !entry.contains("class_name") || !entry["class_name"].is_string())
    fail<ValueError>(where, "a layer object with a string 'class_name'", brief(entry));
  if (!entry.contains("config")) fail<ValueError>(where + " ('" + entry["class_name"].get<std::string>() + "')", "a 'config' entry", "none");
  const std::string cls = entry["class_name"].get<std::string>();
  const json& config = entry["config"];
  if (cls == "Sequential") return sequential_at(config, where, entry.value("build_config", json()));
  if (is_model_class(cls)) return functional_at(config, where);
  if (!config.is_object()) fail<ValueError>(where + " 'config'", "an object", brief(config));
  std::string name = cls;
  if (entry.contains("registered_name") && entry["registered_name"].is_string()) {
    std::string r = entry["registered_name"].get<std::string>();
    if (r.find('>') != std::string::npos) name = r;
  }
  // Name the entry in the layer's own errors; the type stays (a ShapeError is passed on as is).
  try {
    return layer_from_config(name, config);
  } catch (const TypeError& e) {
    throw TypeError(where + ": " + e.what());
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(where + ": " + e.what());
  } catch (const ValueError& e) {
    if (typeid(e) != typeid(ValueError)) throw;
    throw ValueError(where + ": " + e.what());
  }
}

using detail::NodeSpec;
using detail::parse_ref;
using detail::Ref;

class FunctionalReader {
 public:
  FunctionalReader(const json& config, std::string where) : config_(config), where_(std::move(where)) {}

  std::shared_ptr<Model> read() {
    if (!config_.is_object()) fail<ValueError>(where_, "a Functional config object", brief(config_));
    for (const char* key : {"layers", "input_layers", "output_layers"})
      if (!config_.contains(key)) fail<ValueError>(where_, std::string("a '") + key + "' entry", "none");
    if (!config_["layers"].is_array()) fail<ValueError>(where_ + " 'layers'", "a list", brief(config_["layers"]));
    create_layers();
    compute_offsets();
    run_worklist();
    auto inputs = io_tensors(config_["input_layers"], where_ + " 'input_layers'");
    auto outputs = io_tensors(config_["output_layers"], where_ + " 'output_layers'");
    std::string name = config_.contains("name") && config_["name"].is_string() ? config_["name"].get<std::string>() : "";
    auto model = std::make_shared<Model>(inputs, outputs, name);
    if (config_.contains("trainable") && config_["trainable"] == false) model->set_trainable(false);
    return model;
  }

 private:
  struct Slot {
    LayerPtr layer;
    std::string cls, where;
    std::vector<std::vector<KerasTensor>> made;  // outputs of each replayed call
    std::deque<NodeSpec> pending;
    int legacy_offset = 0;  // 1 for a nested model referenced by Keras 2 node lists
    int io_offset = 0;      // the same for input_layers/output_layers
  };

  void create_layers() {
    const json& entries = config_["layers"];
    mask_ops_ = detail::mask_operations(config_);
    for (size_t i = 0; i < entries.size(); ++i) {
      const json& e = entries[i];
      std::string w = where_ + " layers[" + std::to_string(i) + "]";
      std::string name;
      if (e.is_object() && e.contains("name") && e["name"].is_string()) name = e["name"].get<std::string>();
      else if (e.is_object() && e.contains("config") && e["config"].is_object() && e["config"].contains("name") &&
               e["config"]["name"].is_string())
        name = e["config"]["name"].get<std::string>();
      else fail<ValueError>(w, "a layer entry with a 'name'", brief(e));
      w += " ('" + name + "')";
      if (mask_ops_.count(name)) continue;  // a recorded mask computation: masks propagate here by themselves
      if (index_.count(name)) fail<ValueError>(w, "unique layer names", "'" + name + "' twice");
      Slot slot;
      slot.cls = e["class_name"].get<std::string>();
      slot.where = w;
      if (detail::is_operation_entry(e)) {  // Keras 3 operation or TFOpLambda: constants in its calls
        auto op = detail::read_operation_entry(e, w);
        slot.layer = op.layer;
        for (size_t n = 0; n < op.calls.size(); ++n) {
          NodeSpec spec{{}, {}, op.legacy, w + " inbound_nodes[" + std::to_string(n) + "]"};
          for (const auto& r : op.calls[n]) spec.inputs.push_back(parse_ref(r, spec.where));
          slot.pending.push_back(std::move(spec));
        }
      } else {
        slot.layer = layer_from_entry(e, w);
        const json nodes = e.value("inbound_nodes", json::array());
        if (!nodes.is_array()) fail<ValueError>(w + " 'inbound_nodes'", "a list", brief(nodes));
        for (size_t n = 0; n < nodes.size(); ++n)
          slot.pending.push_back(
              detail::parse_node(nodes[n], slot.layer->class_name(), mask_ops_, w + " inbound_nodes[" + std::to_string(n) + "]"));
      }
      if (slot.layer->name() != name) slot.layer->set_name(name);
      // Keras 3 records a call's training default (Dropout's false, the image preprocessing
      // layers' true) as if it were given, and its Functional.call replaces it by the model's
      // mode: not replayed (detail/node_kwargs.h), so a Keras model with augmentation predicts
      // without augmenting, as in Keras. Keras 2 node lists record only what the caller passed.
      for (auto& node : slot.pending)
        if (!node.legacy && node.args.training &&
            detail::is_call_default(slot.layer->class_name(), "training", *node.args.training))
          node.args.training.reset();
      if (auto input = std::dynamic_pointer_cast<layers::InputLayerImpl>(slot.layer)) {
        if (!slot.pending.empty())
          fail<ValueError>(w + " 'inbound_nodes'", "none for an InputLayer", brief(e["inbound_nodes"]));
        slot.made.push_back({input->output()});
      }
      index_[name] = slots_.size();
      slots_.push_back(std::move(slot));
    }
  }

  // Keras 2 node lists count a nested model's first call as node 1; Keras 3 keras_history does
  // not, while Keras 3 input/output layers do for a nested Functional. For Keras 2 refs the
  // offset is read from the data: every saved call is referenced, so it is 1 iff no ref says 0.
  void compute_offsets() {
    bool legacy = false;
    std::map<std::string, int> min_ref;
    auto note = [&](const Ref& r) {
      auto it = min_ref.find(r.layer);
      if (it == min_ref.end() || r.node < it->second) min_ref[r.layer] = r.node;
    };
    for (const auto& s : slots_)
      for (const auto& n : s.pending)
        if (n.legacy) {
          legacy = true;
          for (const auto& r : n.inputs) note(r);
        }
    if (legacy)
      for (const char* key : {"input_layers", "output_layers"})
        for (const auto& r : flatten_refs(config_[key], where_ + " '" + key + "'")) note(r);
    for (auto& s : slots_) {
      if (!std::dynamic_pointer_cast<Model>(s.layer)) continue;
      auto it = min_ref.find(s.layer->name());
      s.legacy_offset = it != min_ref.end() && it->second >= 1 ? 1 : 0;
      s.io_offset = legacy ? s.legacy_offset : (s.cls != "Sequential" ? 1 : 0);
    }
  }

  // The tensor a reference names, or nullopt while its call has not been replayed yet.
  std::optional<KerasTensor> resolve(const Ref& r, int offset_kind, const std::string& where) const {
    auto it = index_.find(r.layer);
    if (it == index_.end()) fail<ValueError>(where, "a reference to a layer of this model", "unknown layer '" + r.layer + "'");
    const Slot& s = slots_[it->second];
    int node = r.node - (offset_kind == 1 ? s.legacy_offset : offset_kind == 2 ? s.io_offset : 0);
    int total = static_cast<int>(s.made.size() + s.pending.size());
    if (node < 0 || node >= total)
      fail<ValueError>(where, "a node index of layer '" + r.layer + "' (" + std::to_string(total) + " call(s) saved)",
                       std::to_string(r.node));
    if (node >= static_cast<int>(s.made.size())) return std::nullopt;
    const auto& outs = s.made[static_cast<size_t>(node)];
    if (r.tensor < 0 || r.tensor >= static_cast<int>(outs.size()))
      fail<ValueError>(where, "a tensor index below " + std::to_string(outs.size()) + " for layer '" + r.layer + "'",
                       std::to_string(r.tensor));
    return outs[static_cast<size_t>(r.tensor)];
  }

  void run_worklist() {
    for (;;) {
      bool pending = false, progress = false;
      for (auto& s : slots_) {
        while (!s.pending.empty()) {
          const NodeSpec& n = s.pending.front();
          std::vector<KerasTensor> inputs;
          for (const auto& r : n.inputs) {
            auto t = resolve(r, n.legacy ? 1 : 0, n.where);
            if (!t) break;
            inputs.push_back(*t);
          }
          if (inputs.size() < n.inputs.size()) break;
          s.made.push_back((*s.layer)(inputs, n.args));
          s.pending.pop_front();
          progress = true;
        }
        pending = pending || !s.pending.empty();
      }
      if (!pending) return;
      if (!progress) {
        for (const auto& s : slots_)
          if (!s.pending.empty())
            fail<ValueError>(s.pending.front().where, "inputs that some other call produces",
                             "references that never resolve", "The graph has a cycle or inconsistent node indices.");
      }
    }
  }

  std::vector<Ref> flatten_refs(const json& j, const std::string& where) const {
    std::vector<Ref> out;
    if (j.is_array() && !j.empty() && j[0].is_string()) {
      out.push_back(parse_ref(j, where));
    } else if (j.is_array() || j.is_object()) {
      size_t i = 0;
      for (const auto& v : j) {
        for (const auto& r : flatten_refs(v, where + "[" + std::to_string(i) + "]")) out.push_back(r);
        ++i;
      }
    } else {
      fail<ValueError>(where, "a [layer, node, tensor] triple, or a list or dict of them", brief(j));
    }
    return out;
  }

  std::vector<KerasTensor> io_tensors(const json& j, const std::string& where) const {
    std::vector<KerasTensor> out;
    for (const auto& r : flatten_refs(j, where)) {
      auto t = resolve(r, 2, where);
      if (!t) fail<ValueError>(where, "a replayed call", "a reference to a call that never ran");
      out.push_back(*t);
    }
    if (out.empty()) fail<ValueError>(where, "at least one reference", "none");
    return out;
  }

  const json& config_;
  std::string where_;
  std::vector<Slot> slots_;
  std::map<std::string, size_t> index_;
  std::set<std::string> mask_ops_;  // recorded mask computations, not rebuilt (detail/call_nodes.h)
};

std::shared_ptr<Model> functional_at(const json& config, const std::string& where) {
  return FunctionalReader(config, where).read();
}

// Sequential: {"name", "layers", ...} or (Keras <= 2.2) a bare list of layers. The input comes
// from a leading InputLayer, a Keras 2 first layer's batch_input_shape, the Keras 3
// build_input_shape, the first layer's build_config, or a built first model's input, in that order.
std::shared_ptr<Model> sequential_at(const json& config, const std::string& where, const json& build_config) {
  const bool bare = config.is_array();
  if (!bare && (!config.is_object() || !config.contains("layers") || !config["layers"].is_array()))
    fail<ValueError>(where + " 'config'", "a Sequential config with a 'layers' list", brief(config));
  const json& entries = bare ? config : config["layers"];
  std::vector<LayerPtr> stack;
  for (size_t i = 0; i < entries.size(); ++i)
    stack.push_back(layer_from_entry(entries[i], where + " layers[" + std::to_string(i) + "]"));
  std::optional<Shape> input_shape;
  if (!stack.empty() && !std::dynamic_pointer_cast<layers::InputLayerImpl>(stack[0])) {
    const json& first = entries[0];
    const json first_config = first.value("config", json::object());
    if (first_config.is_object() && first_config.contains("batch_input_shape"))
      input_shape = config::shape_from_json(first_config["batch_input_shape"], where + " layers[0] 'batch_input_shape'");
    else if (!bare && config.contains("build_input_shape") && !config["build_input_shape"].is_null())
      input_shape = config::shape_from_json(config["build_input_shape"], where + " 'build_input_shape'");
    else if (build_config.is_object() && build_config.contains("input_shape") && !build_config["input_shape"].is_null())
      input_shape = config::shape_from_json(build_config["input_shape"], where + " build_config 'input_shape'");
    else if (first.contains("build_config") && first["build_config"].is_object() &&
             first["build_config"].contains("input_shape") && first["build_config"]["input_shape"].is_array() &&
             (first["build_config"]["input_shape"].empty() || !first["build_config"]["input_shape"][0].is_array()))
      input_shape = config::shape_from_json(first["build_config"]["input_shape"], where + " layers[0] build_config");
    else if (auto backbone = std::dynamic_pointer_cast<Model>(stack[0]); backbone && backbone->built() &&
             backbone->inputs().size() == 1)
      input_shape = backbone->inputs()[0].shape;  // a built model first: its input
  }
  std::string name = !bare && config.contains("name") && config["name"].is_string() ? config["name"].get<std::string>() : "";
  auto model = std::make_shared<Sequential>(stack, name);
  if (input_shape) model->build_for(*input_shape);
  if (!bare && config.contains("trainable") && config["trainable"] == false) model->set_trainable(false);
  return model;
}

KERAS_REGISTER_LAYER(Functional, [](const json& c) -> LayerPtr { return model_config_detail::functional_from_config(c); });
KERAS_REGISTER_LAYER(Model, [](const json& c) -> LayerPtr { return model_config_detail::functional_from_config(c); });
KERAS_REGISTER_LAYER(Sequential, [](const json& c) -> LayerPtr { return model_config_detail::sequential_from_config(c); });
// Functional.call(inputs, training=None, mask=None) and Sequential.call alike; a Functional takes
// its inputs unconverted (Functional.__init__ sets _convert_input_args = False).
KERAS_SIGNATURE(Functional, .takes_mask = true, .converts_inputs = false);
KERAS_SIGNATURE(Model, .takes_mask = true, .converts_inputs = false);
KERAS_SIGNATURE(Sequential, .takes_mask = true);

}  // namespace

namespace model_config_detail {
std::shared_ptr<Model> functional_from_config(const json& config) { return functional_at(config, "Functional config"); }
std::shared_ptr<Model> sequential_from_config(const json& config) { return sequential_at(config, "Sequential config", json()); }
}  // namespace model_config_detail

std::shared_ptr<Model> model_from_config(const json& object) {
  const std::string where = "model_from_config";
  if (!object.is_object() || !object.contains("class_name") || !object["class_name"].is_string())
    fail<ValueError>(where, "a model object {\"class_name\", \"config\"}", brief(object));
  LayerPtr layer;
  try {
    layer = layer_from_entry(object, where + " ('" + object["class_name"].get<std::string>() + "')");
  } catch (const json::exception& e) {
    // A value of the wrong JSON type somewhere in a corrupt or hand-edited config.
    fail<ValueError>(where, "config values of the documented types", e.what());
  }
  auto model = std::dynamic_pointer_cast<Model>(layer);
  if (!model)
    fail<TypeError>(where, "a model class (Functional, Sequential or a registered model)",
                    "'" + object["class_name"].get<std::string>() + "'");
  return model;
}

std::shared_ptr<Model> model_from_json(const std::string& text) {
  json object;
  try {
    object = json::parse(text);
  } catch (const json::parse_error& e) {
    fail<ValueError>("model_from_json", "valid JSON",
                     "a parse error at byte " + std::to_string(e.byte) + " of " + std::to_string(text.size()),
                     std::string(e.what()));
  }
  return model_from_config(object);
}

}  // namespace keras
