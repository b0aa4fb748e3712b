// The masks Keras 3 records in Functional configs (keras/saving/detail/mask_nodes.h).
#include "keras/saving/detail/mask_nodes.h"

#include <algorithm>
#include <cctype>

#include "keras/models/model.h"
#include "layers/layer_config.h"
#include "layers/concatenate.h"
#include "layers/masking.h"
#include "layers/merge.h"

namespace keras::detail {

MaskNodes::MaskNodes(std::function<json(const KerasTensor&)> keras_tensor, std::set<std::string> taken)
    : keras_tensor_(std::move(keras_tensor)), taken_(std::move(taken)) {}

json MaskNodes::mask_of(const KerasTensor& t) {
  const int op = compute(t);
  if (op < 0) return nullptr;
  mark_used(op);
  return tensor_of(op);
}

std::map<const Layer*, std::vector<json>> MaskNodes::entries() const {
  std::map<const Layer*, std::vector<json>> out;
  for (const auto& op : ops_)
    if (op.used) out[op.after].push_back(op.entry);
  return out;
}

int MaskNodes::compute(const KerasTensor& t) {
  const Key key{t.layer.get(), t.node_index, t.tensor_index};
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  const Layer& layer = *t.layer;
  const LayerNode& node = *t.node;
  int result = -1;
  // After a nested model Keras 3 records none (mask_nodes.h); an InputLayer has none.
  if (!node.inputs.empty() && layer.supports_masking() && !dynamic_cast<const Model*>(&layer)) {
    const size_t positional = node.inputs.size() - node.args.keywords.size();
    std::vector<int> in;
    for (size_t i = 0; i < positional; ++i) in.push_back(compute(node.inputs[i]));
    const bool any = std::any_of(in.begin(), in.end(), [](int m) { return m >= 0; });
    const std::string cls = layer.class_name();
    if (t.tensor_index != 0) {
      // Keras's compute_mask results beyond the first output (RNN states) are None.
    } else if (cls == "Embedding") {  // ops.not_equal(inputs, 0)
      const KerasTensor& ids = node.inputs[0];
      result = add("NotEqual", "keras.src.ops.numpy", json::object(), json::array({keras_tensor_(ids), 0}), {}, &layer,
                   ids.shape);
    } else if (auto masking = dynamic_cast<const layers::MaskingImpl*>(&layer)) {
      // ops.any(ops.not_equal(inputs, mask_value), axis=-1)
      const KerasTensor& x = node.inputs[0];
      const int ne = add("NotEqual", "keras.src.ops.numpy", json::object(),
                         json::array({keras_tensor_(x), masking->options().mask_value}), {}, &layer, x.shape);
      Shape reduced(x.shape.begin(), x.shape.end() - 1);
      result = add("Any", "keras.src.ops.numpy", {{"axis", -1}, {"keepdims", false}}, json::array({tensor_of(ne)}), {ne},
                   &layer, reduced);
    } else if (!any) {
      // Keras's compute_mask(inputs, None): none, for every other layer here.
    } else if (auto concat = dynamic_cast<const layers::ConcatenateImpl*>(&layer)) {
      result = concatenate(node, in, concat->options().axis, &layer);
    } else if (dynamic_cast<const layers::MergeImpl*>(&layer)) {  // logical_or of every input's mask
      if (std::all_of(in.begin(), in.end(), [](int m) { return m >= 0; })) {
        result = in[0];
        for (size_t i = 1; i < in.size(); ++i)
          result = add("LogicalOr", "keras.src.ops.numpy", json::object(), json::array({tensor_of(result), tensor_of(in[i])}),
                       {result, in[i]}, &layer, ops_[result].shape);
      }
    } else {
      // The layer's own compute_mask on stand-ins: the mask it returns is one of its inputs'
      // (passed on, Keras's default) or none; a new one is not modelled.
      try {
        TensorList xs, masks;
        for (size_t i = 0; i < positional; ++i) {
          Shape s = node.inputs[i].shape;
          for (auto& n : s) n = n < 0 ? 1 : n;
          xs.push_back(Tensor::zeros(s, node.inputs[i].dtype));
          masks.push_back(in[i] >= 0 ? Tensor::zeros({1}, DType::boolean) : Tensor());
        }
        const TensorList out = layer.compute_mask(xs, masks);
        if (!out.empty() && out[0].defined())
          for (size_t i = 0; i < masks.size(); ++i)
            if (masks[i].defined() && &masks[i].impl() == &out[0].impl()) result = in[i];
      } catch (const std::exception&) {
        result = -1;
      }
    }
  }
  memo_[key] = result;
  return result;
}

int MaskNodes::concatenate(const LayerNode& node, const std::vector<int>& in, int axis, const Layer* after) {
  // Keras's Concatenate.compute_mask: each input's mask widened to the input's shape (all true
  // where it has none), joined along `axis`, then any over the last axis.
  const char* numpy = "keras.src.ops.numpy";
  json parts = json::array();
  std::vector<int> uses;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < in.size(); ++i) {
    const KerasTensor& x = node.inputs[i];
    int part = in[i];
    if (part < 0) {
      part = add("OnesLike", numpy, {{"dtype", "bool"}}, json::array({keras_tensor_(x)}), {}, after, x.shape);
    } else if (ops_[part].shape.size() < x.shape.size()) {
      Shape expanded = ops_[part].shape;
      expanded.push_back(1);
      const int e = add("ExpandDims", numpy, {{"axis", -1}}, json::array({tensor_of(part)}), {part}, after, expanded);
      const int z = add("ZerosLike", numpy, {{"dtype", "bool"}}, json::array({keras_tensor_(x)}), {}, after, x.shape);
      part = add("LogicalOr", numpy, json::object(), json::array({tensor_of(e), tensor_of(z)}), {e, z}, after, x.shape);
    }
    parts.push_back(tensor_of(part));
    uses.push_back(part);
    shapes.push_back(ops_[part].shape);
  }
  Shape joined = shapes[0];
  const size_t at = static_cast<size_t>(axis < 0 ? axis + static_cast<int>(joined.size()) : axis);
  for (size_t i = 1; i < shapes.size(); ++i)
    joined[at] = joined[at] < 0 || shapes[i][at] < 0 ? -1 : joined[at] + shapes[i][at];
  const int c = add("Concatenate", numpy, {{"axis", axis}}, json::array({parts}), uses, after, joined);
  Shape reduced(joined.begin(), joined.end() - 1);
  return add("Any", numpy, {{"axis", -1}, {"keepdims", false}}, json::array({tensor_of(c)}), {c}, after, reduced);
}

int MaskNodes::add(const std::string& class_name, const std::string& module, json config, json args,
                   std::vector<int> uses, const Layer* after, Shape shape) {
  std::string base;  // Keras's snake-case operation name: NotEqual -> not_equal
  for (char ch : class_name) {
    if (std::isupper(static_cast<unsigned char>(ch)) && !base.empty()) base += '_';
    base += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  std::string name = base;
  for (int i = 1; taken_.count(name); ++i) name = base + "_" + std::to_string(i);
  taken_.insert(name);
  config["name"] = name;
  json entry = {{"module", module},
                {"class_name", class_name},
                {"config", std::move(config)},
                {"registered_name", class_name},
                {"name", name},
                {"inbound_nodes", json::array({{{"args", std::move(args)}, {"kwargs", json::object()}}})}};
  ops_.push_back({std::move(entry), std::move(uses), after, std::move(shape)});
  return static_cast<int>(ops_.size()) - 1;
}

json MaskNodes::tensor_of(int op) const {
  return {{"class_name", "__keras_tensor__"},
          {"config",
           {{"shape", config::shape_to_json(ops_[op].shape)},
            {"dtype", "bool"},
            {"keras_history", {ops_[op].entry["name"], 0, 0}}}}};
}

void MaskNodes::mark_used(int op) {
  if (ops_[op].used) return;
  ops_[op].used = true;
  for (int u : ops_[op].uses) mark_used(u);
}

}  // namespace keras::detail
