#include "keras/export/model_graph.h"

#include <map>
#include <optional>
#include <set>

#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "keras/export/masks.h"
#include "keras/export/stateful.h"
#include "keras/models/conv_bn_fold.h"
#include "keras/models/model.h"

namespace keras::onnx {
namespace {

// One call of a layer: the layer and its node (a node does not name its layer).
struct Call {
  LayerPtr layer;
  std::shared_ptr<const LayerNode> node;
};

const Model* as_model(const Layer& layer) { return dynamic_cast<const Model*>(&layer); }

void collect_unsupported(const Model& model, std::vector<std::string>& bad, std::set<const Layer*>& seen) {
  for (const LayerPtr& l : model.layers()) {
    if (!seen.insert(l.get()).second || l->class_name() == "InputLayer") continue;
    if (const Model* m = as_model(*l)) {
      collect_unsupported(*m, bad, seen);
      continue;
    }
    if (!find_emitter(emitter_key(*l))) bad.push_back(l->where());
  }
}

// The calls of `model`'s graph that its outputs depend on, inputs first (its own input nodes
// excluded). Iterative post-order depth-first walk, as Model builds its graph.
std::vector<Call> topological_calls(const Model& model) {
  std::set<const LayerNode*> done;
  for (const auto& t : model.inputs()) done.insert(t.node.get());
  std::vector<Call> order;
  struct Frame {
    KerasTensor t;
    bool expanded;
  };
  std::vector<Frame> stack;
  for (auto it = model.outputs().rbegin(); it != model.outputs().rend(); ++it) stack.push_back({*it, false});
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    if (done.count(f.t.node.get())) continue;
    if (f.expanded) {
      done.insert(f.t.node.get());
      order.push_back({f.t.layer, f.t.node});
      continue;
    }
    stack.push_back({f.t, true});
    for (auto in = f.t.node->inputs.rbegin(); in != f.t.node->inputs.rend(); ++in)
      if (!done.count(in->node.get())) stack.push_back({*in, false});
  }
  return order;
}

bool is_channel_axis_bn(const Layer& bn, int rank) {
  const json c = bn.get_config();
  const auto& a = c.at("axis");
  int64_t axis = a.is_array() ? (a.size() == 1 ? a[0].get<int64_t>() : 0) : a.get<int64_t>();
  return axis == -1 || axis == rank - 1;
}

class Walker {
 public:
  explicit Walker(Graph& g) : g_(g) {}

  // Emits `model`'s calls on `inputs` (one Value per model input); returns its outputs.
  std::vector<Value> emit_model(const Model& model, const std::vector<Value>& inputs) {
    std::map<const LayerNode*, std::vector<Value>> values;
    for (size_t i = 0; i < inputs.size(); ++i) values[model.inputs()[i].node.get()] = {inputs[i]};
    const std::vector<Call> calls = topological_calls(model);
    std::map<const LayerNode*, std::vector<size_t>> readers;  // calls reading a node's outputs
    for (size_t k = 0; k < calls.size(); ++k)
      for (const auto& in : calls[k].node->inputs) readers[in.node.get()].push_back(k);
    std::set<const LayerNode*> model_outputs;
    for (const auto& t : model.outputs()) model_outputs.insert(t.node.get());

    for (const Call& call : calls) {
      const LayerNode& node = *call.node;
      if (values.count(&node)) continue;  // a BatchNormalization folded into its convolution
      std::vector<Value> args;
      for (const auto& in : node.inputs) args.push_back(values.at(in.node.get()).at(static_cast<size_t>(in.tensor_index)));
      std::vector<Value> outs;
      if (const Model* nested = as_model(*call.layer)) {
        outs = emit_model(*nested, args);
      } else {
        if (!node.args.keywords.empty() && !accepts_keywords(emitter_key(*call.layer)))
          fail<NotImplementedError>(call.layer->where() + " ONNX export", "a call with positional tensors only",
                                    "keyword tensors", "Tensors passed by keyword are not exported yet.");
        const Emitter* emitter = find_emitter(emitter_key(*call.layer));
        if (!emitter) fail<NotImplementedError>(call.layer->where() + " ONNX export", "a layer with an ONNX mapping", "none");
        // An op layer made by arithmetic on KerasTensors has no config (its op and attributes say
        // everything); every other layer's options are its config.
        const json config = emitter_key(*call.layer) == kOpLayerKey ? json::object() : call.layer->get_config();
        EmitCall ec{*call.layer, config, args, node.outputs};
        ec.keywords = node.args.keywords;
        ec.options = node.args.options;
        const LayerNode* folded_bn = nullptr;
        std::optional<detail::ConvBnFold> fold = find_fold(call, readers, calls, model_outputs, folded_bn);
        if (fold) ec.fold = &*fold;
        outs = (*emitter)(g_, ec);
        propagate_masks(g_, ec, outs);
        if (folded_bn) values[folded_bn] = outs;
      }
      if (outs.size() != node.outputs.size())
        fail<ValueError>(call.layer->where() + " ONNX export", std::to_string(node.outputs.size()) + " outputs",
                         std::to_string(outs.size()));
      values[&node] = std::move(outs);
    }
    std::vector<Value> result;
    for (const auto& t : model.outputs()) result.push_back(values.at(t.node.get()).at(static_cast<size_t>(t.tensor_index)));
    return result;
  }

 private:
  // A Conv2D / DepthwiseConv2D call whose only reader is a channel-axis BatchNormalization call
  // (and which is no model output): the fold, and that normalization's node.
  std::optional<detail::ConvBnFold> find_fold(const Call& call, const std::map<const LayerNode*, std::vector<size_t>>& readers,
                                              const std::vector<Call>& calls, const std::set<const LayerNode*>& outputs,
                                              const LayerNode*& bn_node) {
    const std::string kind = call.layer->class_name();
    if ((kind != "Conv2D" && kind != "DepthwiseConv2D") || outputs.count(call.node.get())) return std::nullopt;
    auto it = readers.find(call.node.get());
    if (it == readers.end() || it->second.size() != 1) return std::nullopt;
    const Call& bn = calls[it->second[0]];
    if (bn.layer->class_name() != "BatchNormalization" || bn.node->inputs.size() != 1 ||
        !is_channel_axis_bn(*bn.layer, static_cast<int>(bn.node->inputs[0].shape.size())))
      return std::nullopt;
    auto fold = detail::ConvBnFold::match(call.layer, bn.layer, nullptr);
    if (fold) bn_node = bn.node.get();
    return fold;
  }

  Graph& g_;
};

std::string dtype_where(const std::string& name) { return "ONNX export of input '" + name + "'"; }

}  // namespace

void check_exportable(const Model& model) {
  std::vector<std::string> bad;
  std::set<const Layer*> seen;
  collect_unsupported(model, bad, seen);
  if (bad.empty()) return;
  std::string got;
  for (const auto& b : bad) got += (got.empty() ? "" : ", ") + b;
  std::string known;
  for (const auto& k : exportable_classes())
    if (k != kOpLayerKey) known += (known.empty() ? "" : ", ") + k;
  fail<NotImplementedError>("ONNX export of model '" + model.name() + "'", "layers with an ONNX mapping", got,
                            "Exportable classes: " + known + ".");
}

Graph build_graph(const Model& model, const ExportOptions& options) {
  const std::string where = "ONNX export of model '" + model.name() + "'";
  if (options.format != "onnx") fail<ValueError>(where, "format 'onnx'", "'" + options.format + "'");
  if (options.opset < 17 || options.opset > 21) fail<ValueError>(where, "opset 17 to 21", std::to_string(options.opset));
  if (!options.dynamic_batch && options.batch_size < 1)
    fail<ValueError>(where, "batch_size >= 1 with dynamic_batch false", std::to_string(options.batch_size));
  if (!model.built() || model.inputs().empty())
    fail<StateError>(where, "a built model", "an unbuilt one", "Give it an Input or call it on data first.");
  check_exportable(model);

  Graph g(options.opset);
  std::vector<Value> inputs;
  for (const auto& t : model.inputs()) {
    const std::string name = t.layer->name();
    if (t.dtype != DType::float32 && t.dtype != DType::int32 && t.dtype != DType::int64)
      fail<NotImplementedError>(dtype_where(name), "float32, int32 or int64", dtype_name(t.dtype));
    g.reserve(name);
    g.add_input({name, t.shape, t.dtype});
    inputs.push_back(Value{name, t.shape, t.dtype, false});
  }
  // Output names: the layers that produce them (Keras's output_names), made unique.
  std::vector<std::string> out_names;
  std::set<std::string> taken;
  for (const auto& t : model.outputs()) {
    std::string name = t.layer->name();
    for (int k = 1; taken.count(name); ++k) name = t.layer->name() + "_" + std::to_string(k);
    taken.insert(name);
    // An output that is a model input itself keeps the input's name for the input.
    if (name == t.layer->name() && t.layer->class_name() == "InputLayer") name += "_output";
    g.reserve(name);
    out_names.push_back(name);
  }
  std::vector<Value> outs = Walker(g).emit_model(model, inputs);
  for (size_t i = 0; i < outs.size(); ++i) {
    g.add_named("Identity", {g.as_keras(outs[i])}, {}, out_names[i]);
    // The value's shape: the symbolic one may differ (RandomCrop at inference keeps its input).
    g.add_output({out_names[i], outs[i].shape, model.outputs()[i].dtype});
  }
  finish_carried_states(g);  // stateful layers' states, after the model's outputs
  return g;
}

}  // namespace keras::onnx
