#include "layers/layer.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <unordered_set>

#include "backend/autodiff.h"
#include "backend/instrumentation.h"
#include "backend/ops.h"

namespace keras {

namespace {
thread_local bool training_mode = false;
}  // namespace

bool current_training() { return training_mode; }
TrainingScope::TrainingScope(bool training) : previous_(training_mode) { training_mode = training; }
TrainingScope::~TrainingScope() { training_mode = previous_; }

std::string snake_case(const std::string& s) {
  // Pass 1: "_" before an uppercase letter followed by lowercase letters (not at the start).
  std::string a;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(s[i])) && i + 1 < s.size() &&
        std::islower(static_cast<unsigned char>(s[i + 1])) && a.back() != '_')
      a += '_';
    a += s[i];
  }
  // Pass 2: "_" between a lowercase letter and an uppercase one.
  std::string b;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0 && std::isupper(static_cast<unsigned char>(a[i])) && std::islower(static_cast<unsigned char>(a[i - 1])))
      b += '_';
    b += static_cast<char>(std::tolower(static_cast<unsigned char>(a[i])));
  }
  return b;
}

std::vector<Shape> with_unknown_batch(std::vector<Shape> shapes) {
  for (auto& s : shapes)
    if (!s.empty()) s[0] = -1;
  return shapes;
}

std::string KerasTensor::str() const {
  return "KerasTensor(shape=" + shape_str(shape) + ", dtype=" + dtype_name(dtype) + ", produced by '" +
         (layer ? layer->name() : std::string("?")) + "')";
}

Layer::Layer(const LayerOptions& options)
    : name_(options.name),
      trainable_(options.trainable),
      policy_(DTypePolicy::from_name(options.dtype, "Layer '" + options.name + "' dtype")) {}

std::string Layer::name() const { return name_.empty() ? snake_case(class_name()) : name_; }

void Layer::set_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos)
    fail<ValueError>(where(), "a non-empty name without '/'", "'" + name + "'");
  name_ = name;
  update_paths(path_prefix_);
}

std::string Layer::where() const { return "Layer '" + name() + "' (" + class_name() + ")"; }

void Layer::set_trainable(bool trainable) {
  trainable_ = trainable;
  for (auto& w : own_weights_) w.variable.set_trainable(trainable && w.trainable_by_design);
  for (auto& sub : sublayers()) sub->set_trainable(trainable);
}

std::vector<Variable> Layer::weights() const {
  std::vector<Variable> out;
  std::unordered_set<const void*> seen;
  for (const auto& w : own_weights_)
    if (seen.insert(w.variable.id()).second) out.push_back(w.variable);
  for (const auto& sub : sublayers())
    for (const auto& v : sub->weights())
      if (seen.insert(v.id()).second) out.push_back(v);
  return out;
}

std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> out;
  for (const auto& v : weights())
    if (v.trainable()) out.push_back(v);
  return out;
}

std::vector<Variable> Layer::non_trainable_weights() const {
  std::vector<Variable> out;
  for (const auto& v : weights())
    if (!v.trainable()) out.push_back(v);
  return out;
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const auto& v : weights()) n += shape_numel(v.shape());
  return n;
}

TensorList Layer::regularization_losses() const {
  TensorList out;
  for (const auto& w : own_weights_)
    if (w.regularizer && w.variable.trainable()) out.push_back((*w.regularizer)(w.variable.value()));
  for (const auto& sub : sublayers())
    for (auto& t : sub->regularization_losses()) out.push_back(t);
  return out;
}

void Layer::set_weights(const TensorList& values) {
  auto ws = weights();
  if (values.size() != ws.size())
    fail<ValueError>(where() + " set_weights", std::to_string(ws.size()) + " arrays", std::to_string(values.size()));
  for (size_t i = 0; i < ws.size(); ++i) ws[i].assign(values[i]);
}

TensorList Layer::get_weights() const {
  TensorList out;
  for (const auto& v : weights()) {
    const Tensor& t = v.value();
    out.push_back(t.device() == Device::cpu() ? t.clone() : t.to(Device::cpu()));  // host copies, as Keras's NumPy arrays
  }
  return out;
}

Variable Layer::add_weight(const std::string& name, const Shape& shape, const InitializerPtr& initializer,
                           bool trainable, const RegularizerPtr& regularizer, const ConstraintPtr& constraint,
                           std::optional<DType> dtype_given) {
  const DType dtype = dtype_given.value_or(policy_.variable_dtype);
  if (!in_build_)
    fail<StateError>(where() + " add_weight('" + name + "')", "a call from build()", "a call outside it");
  for (const auto& w : own_weights_)
    if (w.name == name) fail<ValueError>(where() + " add_weight", "a new weight name", "'" + name + "' twice");
  if (!initializer) fail<ValueError>(where() + " add_weight('" + name + "')", "an initializer", "none");
  if (trainable && !is_floating(dtype))
    fail<ValueError>(where() + " add_weight('" + name + "')", "a floating dtype for a trainable weight", dtype_name(dtype));
  // Initializers may compute on the CPU; the weight moves once, to the default device in effect
  // now (Model::to moves it later, in place, when the model goes elsewhere).
  Tensor value = (*initializer)(shape, dtype);
  if (!(value.device() == default_device())) value = value.to(default_device());
  Variable v(value, path_prefix_ + this->name() + "/" + name, trainable && trainable_);
  if (constraint) v.set_constraint([constraint](const Tensor& w) { return (*constraint)(w); });
  own_weights_.push_back({name, v, trainable, regularizer, constraint});
  return v;
}

void Layer::update_paths(const std::string& prefix) {
  path_prefix_ = prefix;
  for (auto& w : own_weights_) w.variable.set_path(prefix + name() + "/" + w.name);
}

Generator& Layer::generator(std::optional<uint64_t> seed) {
  if (!generator_) generator_.emplace(seed ? *seed : global_generator().next_seed());
  return *generator_;
}

int Layer::record_node(const std::shared_ptr<const LayerNode>& node) {
  nodes_.push_back(node);
  return static_cast<int>(nodes_.size()) - 1;
}

std::vector<KerasTensor> Layer::get_outputs_at(int node_index) {
  const auto nodes = inbound_nodes();
  if (node_index < 0 || node_index >= static_cast<int>(nodes.size()) || !nodes[static_cast<size_t>(node_index)]) {
    std::string held;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i]) held += (held.empty() ? "" : ", ") + std::to_string(i);
    fail<ValueError>(where() + " call " + std::to_string(node_index), "one of the calls held by a model or tensor [" + held + "]",
                     "no such call", "A layer's calls are recorded when it is called on KerasTensors (functional API).");
  }
  const auto& node = nodes[static_cast<size_t>(node_index)];
  std::vector<KerasTensor> out;
  for (size_t i = 0; i < node->outputs.size(); ++i)
    out.push_back({node->outputs[i].shape, node->outputs[i].dtype, shared_from_this(), node, node_index, static_cast<int>(i)});
  return out;
}

std::vector<KerasTensor> Layer::get_inputs_at(int node_index) {
  const auto outs = get_outputs_at(node_index);
  return outs.front().node->inputs;
}

namespace {
int first_held_call(const std::vector<std::shared_ptr<const LayerNode>>& nodes) {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]) return static_cast<int>(i);
  return -1;
}

KerasTensor single(const std::vector<KerasTensor>& tensors, const std::string& where, const char* what) {
  if (tensors.size() != 1)
    fail<ValueError>(where, std::string("one ") + what, std::to_string(tensors.size()) + " " + what + "s",
                     std::string("Use get_") + what + "s_at(node_index).");
  return tensors[0];
}
}  // namespace

KerasTensor Layer::output() {
  return single(get_outputs_at(first_held_call(inbound_nodes())), where() + " output", "output");
}

KerasTensor Layer::input() {
  return single(get_inputs_at(first_held_call(inbound_nodes())), where() + " input", "input");
}

std::vector<std::shared_ptr<const LayerNode>> Layer::inbound_nodes() const {
  std::vector<std::shared_ptr<const LayerNode>> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.lock());
  return out;
}

void Layer::mark_built(const std::vector<Shape>& input_shapes) {
  build_shapes_ = with_unknown_batch(input_shapes);
  built_ = true;
}

json Layer::base_config() const { return {{"name", name()}, {"trainable", trainable_}, {"dtype", policy_.name}}; }
json Layer::get_config() const { return base_config(); }

void Layer::ensure_built(const std::vector<Shape>& input_shapes) {
  validate_input(input_shapes);
  if (built_) return;
  in_build_ = true;
  try {
    build(input_shapes);
  } catch (...) {
    in_build_ = false;
    own_weights_.clear();
    throw;
  }
  in_build_ = false;
  build_shapes_ = with_unknown_batch(input_shapes);
  built_ = true;
}

std::vector<Shape> Layer::compute_output_shape(const std::vector<Shape>& input_shapes) {
  ensure_built(input_shapes);
  NoGradGuard no_grad;
  TensorList probes;
  for (const auto& s : input_shapes) {
    Shape concrete = s;
    for (auto& d : concrete)
      if (d < 0) d = 1;
    probes.push_back(Tensor::zeros(concrete));
  }
  TensorList outs = call(probes, CallContext{false, {}, current_args_.keywords, current_args_.options});
  std::vector<Shape> shapes;
  for (const auto& o : outs) {
    Shape s = o.shape();
    if (!s.empty() && !input_shapes.empty() && !input_shapes[0].empty() && input_shapes[0][0] < 0) s[0] = -1;
    shapes.push_back(s);
  }
  return shapes;
}

std::vector<DType> Layer::compute_output_dtype(const std::vector<DType>& input_dtypes) {
  if (!own_weights_.empty() || input_dtypes.empty()) return {policy_.compute_dtype};
  return {input_dtypes[0]};
}

namespace {

// Makes the keywords and options of `args` the layer's current call arguments (what build() and
// the shape methods read). They stay after the call, so that outside a call they are the last
// call's, and they are written only when they change: calls from several threads at once (predict
// on one model) pass the same ones, so after the first call they only read the slot and never
// race on it.
void set_call_args(CallArgs& slot, const CallArgs& args) {
  if (slot.keywords != args.keywords) slot.keywords = args.keywords;
  if (slot.options != args.options) slot.options = args.options;
}

void check_keywords(const Layer& layer, size_t n_inputs, const CallArgs& args) {
  if (args.keywords.size() > n_inputs)
    fail<ValueError>(layer.where(), "at most one keyword per input (" + std::to_string(n_inputs) + ")",
                     std::to_string(args.keywords.size()) + " keywords");
}

}  // namespace

size_t CallContext::positional_count(size_t n) const { return n >= keywords.size() ? n - keywords.size() : 0; }

TensorList CallContext::keyword(const TensorList& inputs, const std::string& name) const {
  TensorList out;
  const size_t first = positional_count(inputs.size());
  for (size_t j = 0; j < keywords.size() && first + j < inputs.size(); ++j)
    if (keywords[j] == name) out.push_back(inputs[first + j]);
  return out;
}

namespace {
// Keras moves host data to where a layer computes (a NumPy array into a layer on the GPU). Model
// steps place whole batches before their layers see them; this covers eager calls on host
// tensors, such as an adapted preprocessing layer in a Dataset map where the default device is a
// GPU. Masks go along.
void move_host_inputs(TensorList& xs, Device device) {
  for (auto& x : xs)
    if (x.defined() && x.device() == Device::cpu()) {
      Tensor moved = x.to(device);
      if (x.keras_mask().defined()) moved.set_keras_mask(x.keras_mask().to(device));
      x = moved;
    }
}
}  // namespace

Tensor Layer::operator()(const Tensor& x, CallArgs args) {
  TensorList out = (*this)(TensorList{x}, args);
  if (out.size() != 1)
    fail<ValueError>(where(), "one output", std::to_string(out.size()) + " outputs", "Use the list form of the call.");
  return out[0];
}

TensorList Layer::operator()(const TensorList& xs_given, CallArgs args) {
  check_keywords(*this, xs_given.size(), args);
  TensorList xs = xs_given;
  // Host inputs follow the layer's weights (its sublayers' too: an RNN's are its cell's) to their
  // device. Looked at only off the CPU-only path (the default is the CPU there and inside a CPU
  // model's steps) and for host inputs, which a GPU model's steps never pass.
  if (default_device() != Device::cpu() &&
      std::any_of(xs.begin(), xs.end(), [](const Tensor& x) { return x.defined() && x.device() == Device::cpu(); })) {
    const std::vector<Variable> vars = weights();
    if (!vars.empty() && vars.front().value().device() != Device::cpu()) move_host_inputs(xs, vars.front().value().device());
  }
  // Keras's autocast: floating inputs in the compute dtype, masks kept.
  if (autocast_inputs_)
    for (auto& x : xs)
      if (x.defined() && policy_.casts_input(x.dtype())) {
        Tensor cast = ops::cast(x, policy_.compute_dtype);
        if (x.keras_mask().defined()) cast.set_keras_mask(x.keras_mask());
        x = cast;
      }
  // Variables read inside the call come in the compute dtype (two-byte policies only).
  AutocastScope autocast(is_half(policy_.compute_dtype) ? std::optional<DType>(policy_.compute_dtype) : std::nullopt);
  std::optional<instrumentation::LayerScope> layer_scope;  // names are built only while observed
  if (instrumentation::active()) layer_scope.emplace(name(), class_name());
  std::vector<Shape> shapes;
  for (const auto& x : xs) shapes.push_back(x.shape());
  set_call_args(current_args_, args);
  ensure_built(shapes);
  CallContext ctx{args.training.value_or(current_training()), std::move(args.mask), args.keywords, args.options};
  if (ctx.masks.empty()) {
    for (const auto& x : xs)
      if (x.defined() && x.keras_mask().defined()) ctx.masks.push_back(x.keras_mask());
    if (!ctx.masks.empty()) {
      ctx.masks.clear();
      for (const auto& x : xs) ctx.masks.push_back(x.defined() ? x.keras_mask() : Tensor());
    }
  } else if (ctx.masks.size() != xs.size()) {
    fail<ValueError>(where(), "one mask per input (" + std::to_string(xs.size()) + ")",
                     std::to_string(ctx.masks.size()) + " masks", "Pass an undefined Tensor for an input without a mask.");
  }
  TrainingScope scope(ctx.training);
  TensorList outs = call(xs, ctx);
  // Keras's _set_mask_metadata: only outputs without a mask get the computed one.
  if (supports_masking()) {
    bool all_set = true;
    for (const auto& o : outs) all_set = all_set && o.keras_mask().defined();
    if (!all_set) {
      TensorList out_masks = compute_mask(xs, ctx.masks);
      for (size_t i = 0; i < outs.size() && i < out_masks.size(); ++i)
        if (!outs[i].keras_mask().defined() && out_masks[i].defined()) outs[i].set_keras_mask(out_masks[i]);
    }
  } else {
    // Keras: a layer that does not support masking destroys its inputs' masks. An input returned
    // unchanged would carry its mask on (masks live with the tensor): return a new handle.
    for (auto& o : outs)
      if (o.defined() && o.keras_mask().defined())
        for (const auto& x : xs)
          if (x.defined() && &x.impl() == &o.impl()) {
            o = ops::reshape(o, o.shape());
            break;
          }
  }
  if (layer_scope) layer_scope->finished(outs);
  return outs;
}

TensorList Layer::compute_mask(const TensorList& inputs, const TensorList& masks) const {
  (void)inputs;
  return TensorList(1, masks.empty() ? Tensor() : masks[0]);
}

KerasTensor Layer::operator()(const KerasTensor& x, CallArgs args) {
  auto out = (*this)(std::vector<KerasTensor>{x}, args);
  if (out.size() != 1)
    fail<ValueError>(where(), "one output", std::to_string(out.size()) + " outputs", "Use the list form of the call.");
  return out[0];
}

std::vector<KerasTensor> Layer::operator()(const std::vector<KerasTensor>& xs, CallArgs args) {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (const auto& x : xs) {
    shapes.push_back(x.shape);
    dtypes.push_back(autocast_inputs_ && policy_.casts_input(x.dtype) ? policy_.compute_dtype : x.dtype);
  }
  check_keywords(*this, xs.size(), args);
  if (!args.mask.empty())
    fail<ValueError>(where(), "masks attached by layers in a functional graph", "explicit masks in a symbolic call",
                     "Pass masks only in eager calls; in a graph, a Masking or Embedding(mask_zero) layer makes them.");
  set_call_args(current_args_, args);
  std::vector<Shape> out_shapes;
  try {
    ensure_built(shapes);
    out_shapes = compute_output_shape(shapes);
  } catch (const ShapeError& e) {
    // Name the producers so the user can find the mismatch in the graph.
    std::string from;
    for (const auto& x : xs)
      if (x.layer) from += (from.empty() ? "" : ", ") + ("'" + x.layer->name() + "' (" + x.layer->class_name() + ")");
    throw ShapeError(std::string(e.what()) + (from.empty() ? "" : " Inputs produced by layer " + from + "."));
  }
  std::vector<DType> out_dtypes = compute_output_dtype(dtypes);
  auto node = std::make_shared<LayerNode>();
  node->inputs = xs;
  node->args = args;
  for (size_t i = 0; i < out_shapes.size(); ++i)
    node->outputs.push_back({out_shapes[i], i < out_dtypes.size() ? out_dtypes[i] : out_dtypes.back()});
  const int index = record_node(node);
  std::vector<KerasTensor> outs;
  for (size_t i = 0; i < out_shapes.size(); ++i)
    outs.push_back({node->outputs[i].shape, node->outputs[i].dtype, shared_from_this(), node, index, static_cast<int>(i)});
  return outs;
}

}  // namespace keras
