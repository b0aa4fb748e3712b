#include "backend/instrumentation.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/autodiff.h"

namespace keras::instrumentation {
namespace {

using ObserverList = std::vector<std::shared_ptr<Observer>>;

// Constant-initialised, so run_op may read them before any dynamic initialiser has run.
std::atomic<bool> g_active{false};
std::atomic<bool> g_split_activations{false};

// The rest lives in function-local statics: a library's static initialiser (check-numerics
// reading KERAS_CHECK_NUMERICS) may attach an observer before this file's globals would exist.
struct State {
  std::mutex mutex;
  std::shared_ptr<const ObserverList> observers = std::make_shared<ObserverList>();
  StepInfo step;
};
State& state() {
  static State s;
  return s;
}

// Observers are copied out under the lock and called outside it, so one may attach or detach.
std::shared_ptr<const ObserverList> observers() {
  std::lock_guard lock(state().mutex);
  return state().observers;
}

// on_gradient's watches, keyed by tape node; the weak pointer tells a live node from a new one
// that reuses a freed node's address.
struct GradientWatch {
  std::weak_ptr<Node> node;
  std::vector<std::pair<int, GradientFn>> fns;  // output index, callback
};
struct GradientWatches {
  std::mutex mutex;
  std::unordered_map<const void*, GradientWatch> by_node;
  size_t prune_at = 64;
};
GradientWatches& gradient_watches() {
  static GradientWatches w;
  return w;
}

struct ThreadContext {
  std::shared_ptr<const std::string> path;  // null: outside any layer
  bool in_gradient = false;
  std::string forward_op;
  std::shared_ptr<const std::string> gradient_path;
};
thread_local ThreadContext t_context;

const std::string& empty_string() {
  static const std::string empty;
  return empty;
}

}  // namespace

void attach(std::shared_ptr<Observer> observer) {
  State& st = state();
  std::lock_guard lock(st.mutex);
  if (std::find(st.observers->begin(), st.observers->end(), observer) != st.observers->end()) return;
  auto next = std::make_shared<ObserverList>(*st.observers);
  next->push_back(std::move(observer));
  st.observers = std::move(next);
  g_active.store(true, std::memory_order_relaxed);
}

void detach(const Observer* observer) {
  State& st = state();
  std::lock_guard lock(st.mutex);
  auto next = std::make_shared<ObserverList>(*st.observers);
  std::erase_if(*next, [&](const auto& o) { return o.get() == observer; });
  g_active.store(!next->empty(), std::memory_order_relaxed);
  st.observers = std::move(next);
}

bool active() { return g_active.load(std::memory_order_relaxed); }

void set_split_fused_activations(bool on) { g_split_activations.store(on, std::memory_order_relaxed); }
bool split_fused_activations() { return g_split_activations.load(std::memory_order_relaxed); }

const std::string& layer_path() { return t_context.path ? *t_context.path : empty_string(); }

std::shared_ptr<const std::string> layer_path_handle() { return active() ? t_context.path : nullptr; }

void set_step(StepInfo info) {
  std::lock_guard lock(state().mutex);
  state().step = std::move(info);
}

StepInfo step() {
  std::lock_guard lock(state().mutex);
  return state().step;
}

StepScope::StepScope() : on_(true), previous_(step()) {}

StepScope::~StepScope() {
  if (on_) set_step(std::move(previous_));
}

void on_gradient(const Tensor& t, GradientFn fn) {
  if (!active() || !t.defined() || !t.impl().grad_fn) return;
  const std::shared_ptr<Node>& node = t.impl().grad_fn;
  GradientWatches& w = gradient_watches();
  std::lock_guard lock(w.mutex);
  if (w.by_node.size() >= w.prune_at) {
    std::erase_if(w.by_node, [](const auto& kv) { return kv.second.node.expired(); });
    w.prune_at = std::max<size_t>(64, 2 * w.by_node.size());
  }
  GradientWatch& watch = w.by_node[node.get()];
  if (watch.node.lock() != node) watch = GradientWatch{node, {}};
  watch.fns.emplace_back(t.impl().output_index, std::move(fn));
}

LayerScope::LayerScope(const std::string& name, const std::string& class_name) {
  if (!active()) return;
  on_ = true;
  class_name_ = class_name;
  previous_ = t_context.path;
  t_context.path = std::make_shared<const std::string>(previous_ ? *previous_ + "/" + name : name);
  for (const auto& o : *observers()) o->layer_begin(*t_context.path, class_name_);
}

LayerScope::~LayerScope() {
  if (on_) t_context.path = std::move(previous_);
}

void LayerScope::finished(const TensorList& outputs) {
  if (!on_) return;
  for (const auto& o : *observers()) o->layer_end(*t_context.path, class_name_, outputs);
}

GradientScope::GradientScope(std::string forward_op, std::shared_ptr<const std::string> path) {
  if (!active()) return;
  on_ = true;
  previous_in_gradient_ = t_context.in_gradient;
  previous_op_ = std::move(t_context.forward_op);
  previous_path_ = std::move(t_context.gradient_path);
  t_context.in_gradient = true;
  t_context.forward_op = std::move(forward_op);
  t_context.gradient_path = std::move(path);
}

GradientScope::~GradientScope() {
  if (!on_) return;
  t_context.in_gradient = previous_in_gradient_;
  t_context.forward_op = std::move(previous_op_);
  t_context.gradient_path = std::move(previous_path_);
}

namespace detail {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void notify_op(const OpDef& op, const Attrs& attrs, const TensorList& inputs, const TensorList& outputs,
               int64_t start_ns, int64_t end_ns) {
  const ThreadContext& c = t_context;
  const std::string& path =
      c.in_gradient ? (c.gradient_path ? *c.gradient_path : empty_string()) : layer_path();
  OpRecord record{op, attrs, inputs, outputs, c.in_gradient ? Phase::gradient : Phase::forward,
                  path, c.in_gradient ? c.forward_op : empty_string(), start_ns, end_ns};
  for (const auto& o : *observers()) o->op_run(record);
}

void notify_gradients(const void* node, const TensorList& grad_outputs) {
  std::vector<std::pair<int, GradientFn>> fns;
  {
    GradientWatches& w = gradient_watches();
    std::lock_guard lock(w.mutex);
    if (w.by_node.empty()) return;
    auto it = w.by_node.find(node);
    if (it == w.by_node.end()) return;
    if (it->second.node.lock().get() != node) {
      w.by_node.erase(it);
      return;
    }
    fns = it->second.fns;
  }
  for (const auto& [index, fn] : fns)
    if (index >= 0 && static_cast<size_t>(index) < grad_outputs.size()) fn(grad_outputs[static_cast<size_t>(index)]);
}

}  // namespace detail
}  // namespace keras::instrumentation
