// The functional graph of a Model: construction from KerasTensors, naming, execution.
#include <algorithm>
#include <map>
#include <set>

#include "backend/autodiff.h"
#include "keras/models/conv_bn_fold.h"
#include "keras/models/layer_order.h"
#include "keras/models/model.h"
#include "keras/models/train_state.h"
#include "layers/elementwise_merge.h"

namespace keras {

struct Model::Graph {
  struct Step {
    LayerPtr layer;
    std::shared_ptr<const LayerNode> node;  // the call this step replays
    int node_index = 0;
    std::vector<std::pair<int, int>> args;  // (step, output index) of each input
    int input_position = -1;                // >= 0 for the model's own inputs
  };
  std::vector<KerasTensor> inputs, outputs;
  std::vector<Step> steps;                     // topological order
  std::vector<LayerPtr> layers;                // unique, in Keras's order (layer_order.h)
  bool placed = false;                         // to()'s device applied to every graph layer
  std::vector<std::pair<int, int>> output_refs;
  std::vector<int> last_use;                   // last step reading each step's outputs
  // Conv2D / DepthwiseConv2D -> BatchNormalization (-> ReLU) chains that inference may fold
  // (keras/models/conv_bn_fold.h), and chains that end in a residual Add (-> ReLU).
  struct Fold {
    int bn_step = -1, relu_step = -1;
    detail::ConvBnFold fold;
    // BatchNormalization -> Add(the other input: `residual`, (step, output)) -> ReLU at relu_step
    // when `with_add` is set; `fold` then stops at the normalization (for when it is not at hand).
    int add_step = -1;
    std::pair<int, int> residual{-1, 0};
    std::optional<detail::ConvBnFold> with_add;
  };
  std::map<int, Fold> folds;  // by the convolution's step
  // BatchNormalization steps whose only reader is a ReLU / ReLU6 of the same compute dtype: the
  // normalization applies it ("_fused_activation", layers/batch_normalization.cpp) and the ReLU
  // step is skipped. By the normalization's step: (the ReLU's step, "relu" or "relu6").
  std::map<int, std::pair<int, std::string>> bn_relus;
  // Add steps of two inputs whose only reader is a ReLU of the same compute dtype: the Add applies
  // it ("_fused_activation", layers/elementwise_merge.cpp) and the ReLU step is skipped. By the
  // Add's step: the ReLU's step.
  std::map<int, int> add_relus;
  // BatchNormalization steps whose only reader is such an Add (of add_relus), of the same compute
  // dtype: in training the normalization takes the Add's other input (keyword "_residual",
  // layers/batch_normalization.cpp) and computes the ReLU's output in one pass; the Add and ReLU
  // steps are skipped. Taken only where the other input is computed already. By the
  // normalization's step.
  struct BnAddRelu {
    int add_step = -1, relu_step = -1;
    std::pair<int, int> residual{-1, 0};
  };
  std::map<int, BnAddRelu> bn_add_relus;
  void find_folds();
  static int residual_add(const Graph& g, int bn, const std::vector<int>& readers);
};

// Finds the foldable chains: each step of the chain has one input, and its output is read by the
// next step only (not by another step, not as a model output).
void Model::Graph::find_folds() {
  Graph& g = *this;
  std::vector<int> readers(g.steps.size(), 0);
  for (const auto& s : g.steps)
    for (const auto& [src, idx] : s.args) ++readers[static_cast<size_t>(src)];
  for (const auto& [src, idx] : g.output_refs) ++readers[static_cast<size_t>(src)];
  auto sole_reader = [&](size_t step) {
    if (readers[step] != 1) return -1;
    for (size_t t = step + 1; t < g.steps.size(); ++t)
      if (g.steps[t].args.size() == 1 && g.steps[t].args[0].first == static_cast<int>(step)) return static_cast<int>(t);
    return -1;
  };
  std::map<const Layer*, int> calls;  // steps per layer: a shared layer is called at several
  for (const auto& step : g.steps) ++calls[step.layer.get()];
  for (size_t s = 0; s < g.steps.size(); ++s) {
    const std::string kind = g.steps[s].layer->class_name();
    if (g.steps[s].input_position >= 0) continue;
    // A shared normalization keeps plain calls: its call options would change from node to node.
    if (kind == "BatchNormalization" && calls[g.steps[s].layer.get()] == 1) {
      const int relu = sole_reader(s);
      const Layer& bn = *g.steps[s].layer;
      if (relu >= 0 && g.steps[static_cast<size_t>(relu)].layer->compute_dtype() == bn.compute_dtype()) {
        const std::string act = detail::fused_relu_of(*g.steps[static_cast<size_t>(relu)].layer);
        if (!act.empty()) g.bn_relus.emplace(static_cast<int>(s), std::pair{relu, act});
      }
    }
    if (kind == "Add" && calls[g.steps[s].layer.get()] == 1 && g.steps[s].args.size() == 2) {
      const int relu = sole_reader(s);
      if (relu >= 0 && g.steps[static_cast<size_t>(relu)].layer->compute_dtype() == g.steps[s].layer->compute_dtype() &&
          detail::fused_relu_of(*g.steps[static_cast<size_t>(relu)].layer) == "relu")
        g.add_relus.emplace(static_cast<int>(s), relu);
    }
    if (kind != "Conv2D" && kind != "DepthwiseConv2D") continue;
    const int bn = sole_reader(s);
    if (bn < 0) continue;
    const int relu = sole_reader(static_cast<size_t>(bn));
    auto fold = detail::ConvBnFold::match(g.steps[s].layer, g.steps[static_cast<size_t>(bn)].layer,
                                          relu < 0 ? nullptr : g.steps[static_cast<size_t>(relu)].layer);
    if (!fold) continue;
    Fold f{bn, fold->folds_relu() ? relu : -1, *fold, -1, {-1, 0}, std::nullopt};
    const int add = f.relu_step < 0 ? residual_add(g, bn, readers) : -1;
    if (add >= 0) {
      const int after = sole_reader(static_cast<size_t>(add));
      f.with_add = fold->with_activation_of(after < 0 ? nullptr : g.steps[static_cast<size_t>(after)].layer);
      f.add_step = add;
      f.relu_step = f.with_add->folds_relu() ? after : -1;
      const auto& args = g.steps[static_cast<size_t>(add)].args;
      f.residual = args[0].first == bn ? args[1] : args[0];
    }
    g.folds.emplace(static_cast<int>(s), std::move(f));
  }
  for (size_t s = 0; s < g.steps.size(); ++s) {
    const Layer& bn = *g.steps[s].layer;
    if (g.steps[s].input_position >= 0 || bn.class_name() != "BatchNormalization" || calls[&bn] != 1) continue;
    const int add = residual_add(g, static_cast<int>(s), readers);
    auto relu = add < 0 ? g.add_relus.end() : g.add_relus.find(add);
    if (relu == g.add_relus.end() || g.steps[static_cast<size_t>(add)].layer->compute_dtype() != bn.compute_dtype())
      continue;
    const auto& args = g.steps[static_cast<size_t>(add)].args;
    g.bn_add_relus.emplace(static_cast<int>(s),
                           BnAddRelu{add, relu->second, args[0].first == static_cast<int>(s) ? args[1] : args[0]});
  }
}

// The step of an Add layer of two distinct inputs of one shape that is the only reader of step
// `bn`'s output; -1 when there is none.
int Model::Graph::residual_add(const Graph& g, int bn, const std::vector<int>& readers) {
  if (readers[static_cast<size_t>(bn)] != 1) return -1;
  for (size_t t = static_cast<size_t>(bn) + 1; t < g.steps.size(); ++t) {
    const Step& step = g.steps[t];
    if (std::none_of(step.args.begin(), step.args.end(), [&](const auto& a) { return a.first == bn; })) continue;
    if (!dynamic_cast<const layers::AddImpl*>(step.layer.get()) || step.args.size() != 2 || step.args[0] == step.args[1])
      return -1;
    const auto& in = step.node->inputs;
    if (in.size() != 2 || in[0].shape != in[1].shape) return -1;  // no broadcasting
    return static_cast<int>(t);
  }
  return -1;
}

Model::Model(const std::string& name) : Layer(LayerOptions{name}), train_(std::make_unique<TrainState>()) {
  autocast_inputs_ = false;  // each layer inside casts for its own policy
}

Model::Model(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs, const std::string& name)
    : Model(name) {
  set_graph(inputs, outputs);
}

Model::Model(const KerasTensor& input, const KerasTensor& output, const std::string& name)
    : Model(std::vector<KerasTensor>{input}, std::vector<KerasTensor>{output}, name) {}

Model::~Model() = default;

bool Model::has_graph() const { return graph_ != nullptr; }

void Model::set_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs) {
  const std::string where = "Model '" + name() + "'";
  if (inputs.empty() || outputs.empty()) fail<ValueError>(where, "at least one input and one output", "none");
  auto g = std::make_unique<Graph>();
  g->inputs = inputs;
  g->outputs = outputs;
  using Key = std::pair<const Layer*, int>;
  std::map<Key, int> step_of;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& t = inputs[i];
    if (!t.layer || t.layer->class_name() != "InputLayer")
      fail<ValueError>(where, "inputs created by keras::layers::Input()", t.str() + " as input " + std::to_string(i));
    Key key{t.layer.get(), t.node_index};
    if (step_of.count(key)) fail<ValueError>(where, "distinct inputs", "input " + std::to_string(i) + " given twice");
    step_of[key] = static_cast<int>(g->steps.size());
    g->steps.push_back({t.layer, t.node, t.node_index, {}, static_cast<int>(i)});
  }
  // Iterative post-order DFS from the outputs: a node is emitted after all its inputs.
  struct Frame { KerasTensor t; bool expanded; };
  std::vector<Frame> stack;
  std::set<Key> on_path;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back({*it, false});
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    if (!f.t.layer) fail<ValueError>(where, "outputs built from layer calls", "a tensor without history");
    Key key{f.t.layer.get(), f.t.node_index};
    if (step_of.count(key)) continue;
    if (!f.t.node) fail<ValueError>(where, "a recorded layer call", f.t.str());
    const LayerNode& node = *f.t.node;
    if (!f.expanded) {
      if (node.inputs.empty())
        fail<ValueError>(where, "outputs that depend only on the model's inputs",
                         "a path from '" + f.t.layer->name() + "' that is not among the inputs",
                         "Pass every keras::layers::Input() the outputs use.");
      if (!on_path.insert(key).second) continue;
      stack.push_back({f.t, true});
      for (auto in = node.inputs.rbegin(); in != node.inputs.rend(); ++in) stack.push_back({*in, false});
      continue;
    }
    on_path.erase(key);
    Graph::Step step{f.t.layer, f.t.node, f.t.node_index, {}, -1};
    for (const auto& in : node.inputs) step.args.emplace_back(step_of.at({in.layer.get(), in.node_index}), in.tensor_index);
    step_of[key] = static_cast<int>(g->steps.size());
    g->steps.push_back(std::move(step));
  }
  for (const auto& t : outputs) g->output_refs.emplace_back(step_of.at({t.layer.get(), t.node_index}), t.tensor_index);
  g->last_use.assign(g->steps.size(), -1);
  for (size_t s = 0; s < g->steps.size(); ++s)
    for (const auto& [src, idx] : g->steps[s].args) g->last_use[static_cast<size_t>(src)] = static_cast<int>(s);
  for (const auto& [src, idx] : g->output_refs) g->last_use[static_cast<size_t>(src)] = static_cast<int>(g->steps.size());
  g->find_folds();
  g->layers = detail::keras_layer_order(inputs, outputs);  // Keras's order: weight files depend on it

  // Deterministic names, unique within this model (decision 5).
  std::set<std::string> used;
  for (const auto& l : g->layers)
    if (l->has_name() && !used.insert(l->name()).second)
      fail<ValueError>(where, "unique layer names", "'" + l->name() + "' twice", "Rename one of the layers.");
  for (const auto& l : g->layers) {
    if (l->has_name()) continue;
    std::string base = snake_case(l->class_name()), candidate = base;
    for (int k = 1; used.count(candidate); ++k) candidate = base + "_" + std::to_string(k);
    used.insert(candidate);
    l->set_name(candidate);
  }
  graph_ = std::move(g);
  std::vector<Shape> in_shapes;
  for (const auto& t : inputs) in_shapes.push_back(t.shape);
  mark_built(in_shapes);
  // Seen from itself, a model's weights are "<layer>/<weight>".
  for (const auto& l : graph_->layers) l->update_paths("");
}

std::vector<LayerPtr> Model::layers() const { return graph_ ? graph_->layers : tracked_; }
std::vector<LayerPtr> Model::sublayers() const { return graph_ ? graph_->layers : tracked_; }

void Model::track_layer(const LayerPtr& layer) {
  if (!layer) fail<ValueError>("Model '" + name() + "' track", "a layer", "an empty handle");
  for (const auto& l : tracked_)
    if (l == layer) return;
  if (!layer->has_name()) {
    std::string base = snake_case(layer->class_name()), candidate = base;
    auto taken = [&](const std::string& n) {
      return std::any_of(tracked_.begin(), tracked_.end(), [&](const LayerPtr& l) { return l->name() == n; });
    };
    for (int k = 1; taken(candidate); ++k) candidate = base + "_" + std::to_string(k);
    layer->set_name(candidate);
  }
  tracked_.push_back(layer);
  layer->update_paths("");
}

LayerPtr Model::get_layer(const std::string& name) const {
  std::string known;
  for (const auto& l : layers()) {
    if (l->name() == name) return l;
    known += (known.empty() ? "" : ", ") + l->name();
  }
  fail<ValueError>("Model '" + this->name() + "' get_layer", "one of [" + known + "]", "'" + name + "'");
}

LayerPtr Model::get_layer(int index) const {
  auto ls = layers();
  if (index < 0 || index >= static_cast<int>(ls.size()))
    fail<IndexError>("Model '" + name() + "' get_layer", "an index in [0, " + std::to_string(ls.size()) + ")",
                     std::to_string(index));
  return ls[static_cast<size_t>(index)];
}

const std::vector<KerasTensor>& Model::inputs() const {
  if (!graph_) fail<StateError>("Model '" + name() + "'", "a built model", "an unbuilt one", "Call it on data first.");
  return graph_->inputs;
}

const std::vector<KerasTensor>& Model::outputs() const {
  if (!graph_) fail<StateError>("Model '" + name() + "'", "a built model", "an unbuilt one", "Call it on data first.");
  return graph_->outputs;
}

namespace {
KerasTensor only(const std::vector<KerasTensor>& tensors, const std::string& where, const char* what) {
  if (tensors.size() != 1)
    fail<ValueError>(where, std::string("one ") + what, std::to_string(tensors.size()),
                     std::string("Use ") + what + "s(), which lists them all.");
  return tensors[0];
}
}  // namespace

KerasTensor Model::input() { return only(inputs(), "Model '" + name() + "' input", "input"); }
KerasTensor Model::output() { return only(outputs(), "Model '" + name() + "' output", "output"); }

void Model::update_paths(const std::string& prefix) {
  // Called by an enclosing model: nested weights are "<model>/<layer>/<weight>" (decision 5).
  Layer::update_paths(prefix);
  for (const auto& l : sublayers()) l->update_paths(prefix + name() + "/");
}

void Model::validate_input(const std::vector<Shape>& shapes) const {
  if (!graph_) return;
  const auto& ins = graph_->inputs;
  if (shapes.size() != ins.size())
    fail<ValueError>("Model '" + name() + "'", std::to_string(ins.size()) + " input(s)", std::to_string(shapes.size()));
  for (size_t i = 0; i < ins.size(); ++i) {
    const Shape& want = ins[i].shape;
    bool ok = want.size() == shapes[i].size();
    for (size_t a = 0; ok && a < want.size(); ++a) ok = want[a] < 0 || shapes[i][a] < 0 || want[a] == shapes[i][a];
    if (!ok) {
      // Name the first layer the input feeds: that is where the user's mental model lives.
      std::string consumer;
      for (const auto& s : graph_->steps)
        for (const auto& [src, idx] : s.args)
          if (consumer.empty() && graph_->steps[static_cast<size_t>(src)].input_position == static_cast<int>(i))
            consumer = s.layer->where();
      fail<ShapeError>("Model '" + name() + "' input " + std::to_string(i) + (consumer.empty() ? "" : " to " + consumer),
                       "shape " + shape_str(want), shape_str(shapes[i]),
                       "The data does not fit the model's input; check the Input shape or the data layout.");
    }
  }
}

TensorList Model::call(const TensorList& inputs, const CallContext& ctx) {
  std::vector<Shape> shapes;
  for (const auto& t : inputs) shapes.push_back(t.shape());
  ensure_graph(shapes);
  if (!graph_)
    fail<StateError>("Model '" + name() + "'", "a functional graph or an overridden call()", "neither",
                     "Build it from Input() tensors, or subclass Model and override call().");
  // A Sequential moved by to() before it had a graph built its layers on the default device.
  if (!graph_->placed) {
    if (placement_) to(*placement_);
    graph_->placed = true;
  }
  validate_input(shapes);
  const Graph& g = *graph_;
  std::vector<TensorList> values(g.steps.size());
  std::vector<char> folded(g.steps.size(), 0);  // computed by an earlier step's fold
  // The residual a fold ending in an Add takes when its convolution (step `conv`) runs: computed
  // already, on the CPU (conv2d_add has no other kernel), of x's dtype and every folded layer's
  // computation, float32 or bfloat16 (mixed_bfloat16: the sum then rounded once, not twice), of
  // the convolution's output shape (no broadcasting), without a mask, and wanting no gradient.
  // Else the Add and what follows run as layers.
  auto residual_at_hand = [&](size_t conv, const Graph::Fold& f, const Tensor& x) -> Tensor {
    const TensorList& held = values[static_cast<size_t>(f.residual.first)];
    if (held.empty()) return Tensor();
    const Tensor& r = held[static_cast<size_t>(f.residual.second)];
    const DType dtype = x.dtype();
    if (r.device().kind != DeviceKind::cpu || x.device().kind != DeviceKind::cpu || r.dtype() != dtype ||
        (dtype != DType::float32 && dtype != DType::bfloat16) || r.keras_mask().defined() ||
        (grad_recording() && r.requires_grad()))
      return Tensor();
    for (int step : {static_cast<int>(conv), f.bn_step, f.add_step, f.relu_step})
      if (step >= 0 && g.steps[static_cast<size_t>(step)].layer->compute_dtype() != dtype) return Tensor();
    if (g.steps[conv].layer->compute_output_shape({x.shape()})[0] != r.shape()) return Tensor();
    return r;
  };
  for (size_t s = 0; s < g.steps.size(); ++s) {
    const auto& step = g.steps[s];
    if (step.input_position >= 0) {
      values[s] = {inputs[static_cast<size_t>(step.input_position)]};
      continue;
    }
    auto drop_inputs = [&] {  // intermediates whose last reader this step is
      for (const auto& [src, idx] : step.args)
        if (g.last_use[static_cast<size_t>(src)] == static_cast<int>(s)) values[static_cast<size_t>(src)].clear();
    };
    if (folded[s]) {
      drop_inputs();
      continue;
    }
    TensorList args;
    args.reserve(step.args.size());
    for (const auto& [src, idx] : step.args) args.push_back(values[static_cast<size_t>(src)][static_cast<size_t>(idx)]);
    auto fold = g.folds.find(static_cast<int>(s));
    if (fold != g.folds.end()) {
      const auto& f = fold->second;
      const auto& bn = g.steps[static_cast<size_t>(f.bn_step)];
      const bool bn_training = bn.node->args.training.value_or(ctx.training);
      if (f.fold.applies(bn_training, args[0])) {
        const Tensor residual = f.with_add ? residual_at_hand(s, f, args[0]) : Tensor();
        const bool add = residual.defined();
        int last = f.bn_step;  // the step whose output the fold computes
        if (add) last = f.relu_step >= 0 ? f.relu_step : f.add_step;
        else if (!f.with_add && f.relu_step >= 0) last = f.relu_step;
        values[static_cast<size_t>(last)] = {add ? f.with_add->run(args[0], residual) : f.fold.run(args[0])};
        folded[static_cast<size_t>(f.bn_step)] = 1;
        if (add) folded[static_cast<size_t>(f.add_step)] = 1;
        if (f.relu_step >= 0 && (add || !f.with_add)) folded[static_cast<size_t>(f.relu_step)] = 1;
        drop_inputs();
        continue;
      }
    }
    CallArgs call_args = step.node->args;
    if (!call_args.training) call_args.training = ctx.training;
    auto bn_relu = g.bn_relus.find(static_cast<int>(s));
    auto add_relu = g.add_relus.find(static_cast<int>(s));
    auto bn_add_relu = g.bn_add_relus.find(static_cast<int>(s));
    const TensorList* residual = nullptr;
    if (bn_add_relu != g.bn_add_relus.end() && conv_bn_folding() && *call_args.training) {
      const TensorList& held = values[static_cast<size_t>(bn_add_relu->second.residual.first)];
      if (!held.empty() && !args[0].keras_mask().defined() &&
          !held[static_cast<size_t>(bn_add_relu->second.residual.second)].keras_mask().defined())
        residual = &held;
    }
    if (residual) {
      const auto& plan = bn_add_relu->second;
      args.push_back((*residual)[static_cast<size_t>(plan.residual.second)]);
      call_args.keywords = {"_residual"};
      call_args.options["_fused_activation"] = "relu";
      values[static_cast<size_t>(plan.relu_step)] = (*step.layer)(args, call_args);
      folded[static_cast<size_t>(plan.add_step)] = 1;
      folded[static_cast<size_t>(plan.relu_step)] = 1;
    } else if (bn_relu != g.bn_relus.end() && conv_bn_folding()) {
      call_args.options["_fused_activation"] = bn_relu->second.second;
      values[static_cast<size_t>(bn_relu->second.first)] = (*step.layer)(args, call_args);
      folded[static_cast<size_t>(bn_relu->second.first)] = 1;
    } else if (add_relu != g.add_relus.end() && conv_bn_folding()) {
      call_args.options["_fused_activation"] = "relu";
      values[static_cast<size_t>(add_relu->second)] = (*step.layer)(args, call_args);
      folded[static_cast<size_t>(add_relu->second)] = 1;
    } else {
      values[s] = (*step.layer)(args, call_args);
    }
    drop_inputs();  // as soon as their last reader has run
  }
  TensorList out;
  for (const auto& [src, idx] : g.output_refs) out.push_back(values[static_cast<size_t>(src)][static_cast<size_t>(idx)]);
  return out;
}

std::vector<Shape> Model::compute_output_shape(const std::vector<Shape>& input_shapes) {
  ensure_graph(input_shapes);
  if (!graph_) return Layer::compute_output_shape(input_shapes);  // subclassed: probe call()
  validate_input(input_shapes);
  std::vector<Shape> out;
  for (const auto& t : graph_->outputs) out.push_back(t.shape);
  return out;
}

std::vector<DType> Model::compute_output_dtype(const std::vector<DType>& input_dtypes) {
  if (!graph_) return Layer::compute_output_dtype(input_dtypes);
  std::vector<DType> out;
  for (const auto& t : outputs()) out.push_back(t.dtype);
  return out;
}

}  // namespace keras
