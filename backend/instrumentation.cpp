#include "backend/instrumentation.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

namespace keras::instrumentation {
namespace {

using ObserverList = std::vector<std::shared_ptr<Observer>>;

std::atomic<bool> g_active{false};
std::mutex g_mutex;
std::shared_ptr<const ObserverList> g_observers = std::make_shared<ObserverList>();
StepInfo g_step;

// Observers are copied out under the lock and called outside it, so one may attach or detach.
std::shared_ptr<const ObserverList> observers() {
  std::lock_guard lock(g_mutex);
  return g_observers;
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
  std::lock_guard lock(g_mutex);
  if (std::find(g_observers->begin(), g_observers->end(), observer) != g_observers->end()) return;
  auto next = std::make_shared<ObserverList>(*g_observers);
  next->push_back(std::move(observer));
  g_observers = std::move(next);
  g_active.store(true, std::memory_order_relaxed);
}

void detach(const Observer* observer) {
  std::lock_guard lock(g_mutex);
  auto next = std::make_shared<ObserverList>(*g_observers);
  std::erase_if(*next, [&](const auto& o) { return o.get() == observer; });
  g_active.store(!next->empty(), std::memory_order_relaxed);
  g_observers = std::move(next);
}

bool active() { return g_active.load(std::memory_order_relaxed); }

const std::string& layer_path() { return t_context.path ? *t_context.path : empty_string(); }

std::shared_ptr<const std::string> layer_path_handle() { return active() ? t_context.path : nullptr; }

void set_step(StepInfo info) {
  std::lock_guard lock(g_mutex);
  g_step = std::move(info);
}

StepInfo step() {
  std::lock_guard lock(g_mutex);
  return g_step;
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

}  // namespace detail
}  // namespace keras::instrumentation
