// Optimizer: the base of keras::optimizers (Keras 3's BaseOptimizer), and the registry by Keras
// class name.
//
// apply(grads, vars), as `optimizer.apply(grads, vars)` in Keras 3, per step:
//   1. builds the slot variables on first use (for the trainable variables given),
//   2. skips pairs whose gradient is undefined and variables that are not trainable (frozen
//      weights stay bit-identical),
//   3. unscales by loss_scale_factor, clips (clipnorm per variable, global_clipnorm over all
//      gradients, or clipvalue; at most one of them), applies decoupled weight decay
//      var -= lr * weight_decay * var, and runs the optimizer's rule,
//   4. increments `iterations`, then projects each updated variable through its constraint
//      (Variable::apply_constraint, Keras's variable.assign(variable.constraint(variable))).
// Steps 3's per-variable work is ONE registered in-place op per variable (update_ops.cpp): the
// preprocessing is folded into the update kernel, so a device backend ports an optimizer by
// registering one kernel.
//
// State is keyed by variable PATH (DESIGN.md decision 5): slots are named
// `<var path with '/' replaced by '_'>_<slot>` under the optimizer's name ("adam/dense_kernel_momentum")
// and listed by variables() in Keras's order: iteration, learning_rate (float rates only), then
// the slots (keras-formats.md section 6).
#pragma once
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/op_registry.h"
#include "backend/variable.h"
#include "optimizers/schedules.h"

namespace keras::optimizers {

// A learning rate: a float or a schedule of the step. Converts implicitly from both, so options
// read `.learning_rate = 1e-3` or `.learning_rate = std::make_shared<schedules::CosineDecay>(...)`.
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}
  template <class S>
    requires std::derived_from<S, schedules::LearningRateSchedule>
  LearningRate(std::shared_ptr<S> schedule) : schedule_(std::move(schedule)) {}
  bool is_schedule() const { return schedule_ != nullptr; }
  double value() const { return value_; }  // meaningful when !is_schedule()
  const schedules::SchedulePtr& schedule() const { return schedule_; }

 private:
  double value_ = 0.0;
  schedules::SchedulePtr schedule_;
};

// The keyword arguments every Keras optimizer takes, in Keras's names. Each options struct
// lists them after its own fields (C++20 designated initialisers cannot reach base members).
#define KERAS_OPTIMIZER_COMMON_FIELDS(default_weight_decay)                      \
  std::optional<double> weight_decay = default_weight_decay;                    \
  std::optional<double> clipnorm;                                               \
  std::optional<double> clipvalue;                                              \
  std::optional<double> global_clipnorm;                                        \
  bool use_ema = false;                    /* not supported yet: must stay false */ \
  double ema_momentum = 0.99;                                                   \
  std::optional<int64_t> ema_overwrite_frequency;                               \
  std::optional<double> loss_scale_factor;                                      \
  std::optional<int64_t> gradient_accumulation_steps; /* not supported yet */   \
  std::string name /* empty: the class's default ("adam") */

struct CommonOptions {
  LearningRate learning_rate = 0.001;
  KERAS_OPTIMIZER_COMMON_FIELDS(std::nullopt);
};

// Copies the common fields between an optimizer's options struct and CommonOptions.
template <class O>
CommonOptions to_common(const O& o) {
  return {o.learning_rate, o.weight_decay, o.clipnorm, o.clipvalue, o.global_clipnorm, o.use_ema, o.ema_momentum,
          o.ema_overwrite_frequency, o.loss_scale_factor, o.gradient_accumulation_steps, o.name};
}
template <class O>
void assign_common(O& o, const CommonOptions& c) {
  o.learning_rate = c.learning_rate;
  o.weight_decay = c.weight_decay;
  o.clipnorm = c.clipnorm;
  o.clipvalue = c.clipvalue;
  o.global_clipnorm = c.global_clipnorm;
  o.use_ema = c.use_ema;
  o.ema_momentum = c.ema_momentum;
  o.ema_overwrite_frequency = c.ema_overwrite_frequency;
  o.loss_scale_factor = c.loss_scale_factor;
  o.gradient_accumulation_steps = c.gradient_accumulation_steps;
  o.name = c.name;
}

class Optimizer {
 public:
  // Throws ValueError when more than one of clipnorm/clipvalue/global_clipnorm is set or
  // gradient_accumulation_steps < 2, NotImplementedError for use_ema or gradient accumulation.
  Optimizer(const CommonOptions& options, const std::string& default_name);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual std::string class_name() const = 0;  // Keras class name: "Adam"
  const std::string& name() const { return name_; }

  // ---- updates ----
  // One step: grads[i] updates vars[i] (see the file comment). An empty list is a no-op.
  // Throws ValueError when the lists differ in length, when every gradient is undefined, or
  // when a trainable variable with a gradient is not in the built set (naming its path; call
  // build() with the new set after a trainability change); ShapeError naming the path when a
  // gradient's shape differs from its variable's.
  virtual void apply(const TensorList& grads, const std::vector<Variable>& vars);
  // Keras 3's scale_loss: the loss whose gradients apply() expects, loss * loss_scale_factor
  // (the loss itself without one). fit's train step calls it; custom training loops should too.
  virtual Tensor scale_loss(const Tensor& loss) const;
  // The same from (gradient, variable) pairs.
  void apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars);

  // ---- state ----
  // Creates the slots of the trainable variables in `vars`, in that order. Called again (after
  // a trainability change, on re-compile) it rebuilds for the new set: slots of paths still
  // present with the same shape keep their values, others are created, dropped ones go.
  // Throws ValueError when two variables share a path.
  virtual void build(const std::vector<Variable>& vars);
  virtual bool built() const { return built_; }
  // Forgets every slot, the built set and the step count (a fresh optimizer with the same
  // hyperparameters).
  virtual void reset();
  // iteration, learning_rate (float rate only), then slots in Keras's order.
  virtual std::vector<Variable> variables() const;
  // The slot `slot` ("momentum") of the variable at `var_path`; ValueError when absent.
  Variable slot(const std::string& var_path, const std::string& slot) const;
  // Paths of the variables the optimizer was built for, in build order.
  const std::vector<std::string>& built_paths() const { return built_paths_; }
  virtual int64_t iterations() const;
  virtual void set_iterations(int64_t value);

  // ---- learning rate ----
  // The rate the next step uses: the schedule at `iterations`, or the float.
  virtual double learning_rate() const;
  // Sets a float rate; TypeError when the optimizer was built with a schedule (as Keras).
  virtual void set_learning_rate(double value);
  virtual void set_learning_rate(schedules::SchedulePtr schedule);
  const schedules::SchedulePtr& learning_rate_schedule() const { return schedule_; }

  // ---- hyperparameters ----
  std::optional<double> weight_decay() const { return weight_decay_; }
  std::optional<double> clipnorm() const { return clipnorm_; }
  std::optional<double> clipvalue() const { return clipvalue_; }
  std::optional<double> global_clipnorm() const { return global_clipnorm_; }
  std::optional<double> loss_scale_factor() const { return loss_scale_factor_; }
  // Variables whose NAME (last path component) contains a match of one of these regular
  // expressions get no weight decay ("bias"). Throws StateError once built, as Keras, and
  // ValueError for an invalid expression.
  void exclude_from_weight_decay(const std::vector<std::string>& var_names);

  // ---- config ----
  // The Keras 3 config: the base keys plus the subclass's own.
  virtual nlohmann::json get_config() const;

 protected:
  // Slot layout: groups of slot names; within a group the slots are interleaved per variable
  // (Adam: {{"momentum", "velocity"}, {"velocity_hat"}}). Fixed at construction.
  virtual std::vector<std::vector<std::string>> slot_layout() const = 0;
  virtual double slot_initial_value(const std::string& slot) const { return 0.0; }
  // The fused update op, fed (var, grad, slots in layout order flattened) and `attrs` (the common
  // ones plus update_attrs()).
  virtual const OpDef& update_op() const = 0;
  virtual void update_attrs(Attrs& attrs) const = 0;
  // One variable's update; the default runs update_op(). `grad` is contiguous, of var's dtype.
  virtual void update_step(const Tensor& grad, const Variable& var, const std::vector<Variable>& slots,
                           const Attrs& attrs);

 private:
  std::vector<std::string> flat_slot_names() const;
  Variable make_slot(const Variable& var, const std::string& slot) const;
  bool use_weight_decay(const Variable& var) const;

  std::string name_;
  schedules::SchedulePtr schedule_;
  Variable learning_rate_var_;  // defined for float rates
  Variable iterations_var_;
  std::optional<double> weight_decay_, clipnorm_, clipvalue_, global_clipnorm_, loss_scale_factor_;
  bool use_ema_ = false;
  double ema_momentum_ = 0.99;
  std::optional<int64_t> ema_overwrite_frequency_, gradient_accumulation_steps_;
  std::vector<std::string> exclude_patterns_;
  mutable std::unordered_map<std::string, bool> decay_cache_;  // variable path -> decayed

  bool built_ = false;
  std::vector<std::string> built_paths_;
  std::unordered_map<std::string, std::vector<Variable>> slots_;  // path -> flat_slot_names() order
};

using OptimizerPtr = std::shared_ptr<Optimizer>;

// Reads the common keys of a Keras 2 or 3 optimizer config (ignoring Keras 2 extras such as
// decay, is_legacy_optimizer, jit_compile); `default_lr` when the config has none.
CommonOptions common_from_config(const nlohmann::json& config, double default_lr);

// ---- registry ----
using OptimizerFactory = std::function<OptimizerPtr(const nlohmann::json& config)>;
// Registers `class_name` (matched case-insensitively) with a factory from a config.
void register_optimizer(const std::string& class_name, OptimizerFactory factory);
std::vector<std::string> known_optimizers();
// A default-configured optimizer by Keras name, case-insensitive ("adam", "SGD", "rmsprop");
// ValueError listing the known names otherwise.
OptimizerPtr get(const std::string& name);
// Rebuilds an optimizer from its Keras object ({"class_name", "config", ...}, Keras 2 or 3, also
// tf.keras's "Custom>Adam") or from a bare name string. ValueError listing the known names.
OptimizerPtr from_config(const nlohmann::json& object);
// The Keras 3 object form: {"module": "keras.optimizers", "class_name", "config", "registered_name": null}.
nlohmann::json serialize(const Optimizer& optimizer);

namespace detail {
struct OptimizerRegistrar {
  OptimizerRegistrar(const char* class_name, OptimizerFactory factory) {
    register_optimizer(class_name, std::move(factory));
  }
};
}  // namespace detail

}  // namespace keras::optimizers
