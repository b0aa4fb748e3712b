#include "backend/autodiff.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "backend/instrumentation.h"
#include "backend/ops.h"

namespace keras {

namespace {
thread_local int tape_depth = 0;
thread_local bool no_grad = false;
}  // namespace

bool grad_recording() { return tape_depth > 0 && !no_grad; }

NoGradGuard::NoGradGuard() : previous_(no_grad) { no_grad = true; }
NoGradGuard::~NoGradGuard() { no_grad = previous_; }

void Node::release() {
  saved_inputs.clear();
  saved_outputs.clear();
  edges.clear();
}

GradientTape::GradientTape(bool persistent) : persistent_(persistent) { ++tape_depth; }

GradientTape::~GradientTape() {
  if (recording_) --tape_depth;
  unwatch_all();
}

void GradientTape::unwatch_all() {
  for (auto& impl : watched_) impl->requires_grad = false;
  watched_.clear();
}

void GradientTape::stop_recording() {
  if (recording_) {
    --tape_depth;
    recording_ = false;
  }
}

void GradientTape::watch(Tensor& t) {
  if (t.grad_fn() || t.impl().requires_grad) return;
  t.set_requires_grad(true);
  watched_.push_back(t.impl_shared());
}

TensorList GradientTape::gradient(const Tensor& target, const TensorList& sources) {
  return gradient(target, sources, {});
}

TensorList GradientTape::gradient(const Tensor& target, const TensorList& sources,
                                  const std::function<void(size_t, const Tensor&)>& on_ready) {
  if (used_ && !persistent_)
    fail<StateError>("GradientTape::gradient", "one call on a non-persistent tape", "a second call",
                     "Create the tape with persistent=true to call gradient() several times.");
  used_ = true;
  // A persistent tape keeps recording while it lives (as tf.GradientTape); gradients themselves
  // are never recorded (compute_gradients runs without the tape).
  if (!persistent_) stop_recording();
  TensorList grads = compute_gradients(target, sources, {}, persistent_, on_ready);
  if (!persistent_) unwatch_all();
  return grads;
}

namespace {
struct SlotKey {
  const Node* node;
  int index;
  bool operator==(const SlotKey&) const = default;
};
struct SlotHash {
  size_t operator()(const SlotKey& k) const { return std::hash<const void*>()(k.node) * 31 + k.index; }
};

void accumulate(Tensor& slot, const Tensor& g) {
  if (!g.defined()) return;
  slot = slot.defined() ? ops::add(slot, g) : g;
}
}  // namespace

TensorList compute_gradients(const Tensor& target, const TensorList& sources, const Tensor& seed_in,
                             bool retain_graph, const GradientReadyFn& on_ready) {
  NoGradGuard no_grad_scope;  // gradients themselves are not recorded
  instrumentation::GradientScope gradient_walk("", nullptr);
  TensorList result(sources.size());
  Tensor seed = seed_in.defined() ? seed_in : Tensor::ones(target.shape(), target.dtype(), target.device());
  if (seed.shape() != target.shape())
    fail<ShapeError>("compute_gradients", "a seed of shape " + shape_str(target.shape()), shape_str(seed.shape()));

  // Where each requested source receives its gradient: a leaf impl or a node output slot.
  std::unordered_map<const TensorImpl*, std::vector<size_t>> leaf_sources;
  std::unordered_map<SlotKey, std::vector<size_t>, SlotHash> slot_sources;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].defined()) continue;
    const TensorImpl& im = sources[i].impl();
    if (im.grad_fn) slot_sources[{im.grad_fn.get(), im.output_index}].push_back(i);
    else leaf_sources[sources[i].impl_ptr()].push_back(i);
  }

  const TensorImpl& root_impl = target.impl();
  if (!root_impl.grad_fn) {
    if (auto it = leaf_sources.find(target.impl_ptr()); it != leaf_sources.end())
      for (size_t i : it->second) {
        result[i] = seed;
        if (on_ready) on_ready(i, seed);
      }
    return result;
  }

  // Dependency counts over the reachable graph (iterative DFS).
  // Consumers per requested leaf too, so that on_ready fires when the last one has run.
  std::unordered_map<const Node*, int> pending;
  std::unordered_map<const TensorImpl*, int> leaf_pending;
  std::vector<Node*> stack{root_impl.grad_fn.get()};
  std::unordered_set<const Node*> seen{root_impl.grad_fn.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& e : n->edges) {
      if (on_ready && e.leaf && leaf_sources.count(e.leaf.get())) ++leaf_pending[e.leaf.get()];
      if (!e.node) continue;
      ++pending[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }

  std::unordered_map<SlotKey, Tensor, SlotHash> grads;
  // Second contributions left unsummed for ops with OpDef::grad_sums_two; a third one sums all,
  // in the order accumulate() would have (IEEE addition of two terms commutes, so the op's sum
  // of the two is the same).
  std::unordered_map<SlotKey, Tensor, SlotHash> addends;
  std::unordered_map<const TensorImpl*, Tensor> leaf_grads;
  grads[{root_impl.grad_fn.get(), root_impl.output_index}] = seed;
  // Nodes are kept alive by their consumers' edges; hold the ready ones explicitly.
  std::vector<std::shared_ptr<Node>> ready{root_impl.grad_fn};
  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    TensorList grad_outputs(node->output_specs.size());
    Tensor addend;
    for (size_t k = 0; k < grad_outputs.size(); ++k) {
      SlotKey key{node.get(), static_cast<int>(k)};
      auto it = grads.find(key);
      if (it != grads.end()) {
        grad_outputs[k] = std::move(it->second);
        grads.erase(it);
      }
      if (auto a = addends.find(key); a != addends.end()) {
        addend = std::move(a->second);
        addends.erase(a);
        // Whoever reads the gradient itself needs the whole of it.
        if (slot_sources.count(key) || instrumentation::active()) accumulate(grad_outputs[k], std::exchange(addend, {}));
      }
      if (auto s = slot_sources.find(key); s != slot_sources.end())
        for (size_t i : s->second) result[i] = grad_outputs[k];
      if (!grad_outputs[k].defined() && (!node->op->grad_takes_missing || instrumentation::active())) {
        const auto& spec = node->output_specs[k];
        grad_outputs[k] = Tensor::zeros(spec.shape, spec.dtype, target.device());
      }
    }
    if (instrumentation::active()) instrumentation::detail::notify_gradients(node.get(), grad_outputs);
    std::vector<bool> needs(node->edges.size());
    bool any = false;
    for (size_t i = 0; i < needs.size(); ++i) any |= (needs[i] = node->edges[i].active());
    if (any) {
      GradContext ctx{node->op, node->attrs, node->input_specs, node->output_specs, node->saved_inputs,
                      node->saved_outputs, grad_outputs, needs, addend.defined() ? &addend : nullptr};
      TensorList gin;
      {
        instrumentation::GradientScope of_node(node->op->name, node->layer_path);
        gin = node->op->grad(ctx);
      }
      for (size_t i = 0; i < node->edges.size(); ++i) {
        const auto& e = node->edges[i];
        if (!e.active()) continue;
        Tensor g = i < gin.size() ? gin[i] : Tensor();
        if (g.defined() && g.shape() != node->input_specs[i].shape)
          fail<ShapeError>("gradient of " + node->op->name, "input " + std::to_string(i) + " gradient of shape " +
                           shape_str(node->input_specs[i].shape), shape_str(g.shape()), "This is a bug in the op's gradient.");
        if (e.leaf) {
          Tensor& slot = leaf_grads[e.leaf.get()];
          accumulate(slot, g);
          if (auto p = leaf_pending.find(e.leaf.get()); p != leaf_pending.end() && --p->second == 0 && slot.defined())
            for (size_t s : leaf_sources[e.leaf.get()]) on_ready(s, slot);
        } else {
          const SlotKey key{e.node.get(), e.output_index};
          Tensor& slot = grads[key];
          if (e.node->op->grad_sums_two && slot.defined() && g.defined() && !addends.count(key)) {
            addends.emplace(key, g);
          } else {
            if (auto a = addends.find(key); a != addends.end() && g.defined()) {
              accumulate(slot, a->second);
              addends.erase(a);
            }
            accumulate(slot, g);
          }
          if (--pending[e.node.get()] == 0) ready.push_back(e.node);
        }
      }
    } else {
      for (const auto& e : node->edges)
        if (e.node && --pending[e.node.get()] == 0) ready.push_back(e.node);
    }
    if (!retain_graph) node->release();
  }
  for (auto& [impl, g] : leaf_grads)
    if (auto it = leaf_sources.find(impl); it != leaf_sources.end())
      for (size_t i : it->second) result[i] = g;
  // Intermediate sources (recorded tensors) are final only now.
  if (on_ready)
    for (const auto& [key, indices] : slot_sources)
      for (size_t i : indices)
        if (result[i].defined()) on_ready(i, result[i]);
  return result;
}

}  // namespace keras
