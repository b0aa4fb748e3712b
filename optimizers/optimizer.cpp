#include "optimizers/optimizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>
#include <regex>
#include <unordered_set>

#include "backend/ops.h"

namespace keras::optimizers {
namespace {

using nlohmann::json;

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json optional_json(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string slot_variable_name(const std::string& var_path, const std::string& slot) {
  std::string s = var_path;
  std::replace(s.begin(), s.end(), '/', '_');
  return s + "_" + slot;
}

// The squared L2 norm of a gradient, through the registered reduction (any device).
double sum_of_squares(const Tensor& g) {
  static const OpDef& def = OpRegistry::instance().find("sum_squares_f64");
  return run_op1(def, {g}).item();
}

}  // namespace

// ---- construction ----

Optimizer::Optimizer(const CommonOptions& o, const std::string& default_name)
    : name_(o.name.empty() ? default_name : o.name),
      weight_decay_(o.weight_decay),
      clipnorm_(o.clipnorm),
      clipvalue_(o.clipvalue),
      global_clipnorm_(o.global_clipnorm),
      loss_scale_factor_(o.loss_scale_factor),
      use_ema_(o.use_ema),
      ema_momentum_(o.ema_momentum),
      ema_overwrite_frequency_(o.ema_overwrite_frequency),
      gradient_accumulation_steps_(o.gradient_accumulation_steps) {
  const std::string where = default_name + " optimizer";
  int clips = (o.clipnorm ? 1 : 0) + (o.clipvalue ? 1 : 0) + (o.global_clipnorm ? 1 : 0);
  if (clips > 1)
    fail<ValueError>(where, "at most one of clipnorm, clipvalue and global_clipnorm",
                     std::to_string(clips) + " of them set");
  if (o.gradient_accumulation_steps && *o.gradient_accumulation_steps < 2)
    fail<ValueError>(where, "gradient_accumulation_steps >= 2", std::to_string(*o.gradient_accumulation_steps));
  if (o.gradient_accumulation_steps)
    fail<NotImplementedError>(where, "gradient_accumulation_steps unset", std::to_string(*o.gradient_accumulation_steps),
                              "Gradient accumulation is not supported yet.");
  if (o.use_ema)
    fail<NotImplementedError>(where, "use_ema = false", "true", "Weight EMA is not supported yet.");
  if (o.loss_scale_factor && *o.loss_scale_factor == 0)
    fail<ValueError>(where, "a non-zero loss_scale_factor", "0");
  iterations_var_ = Variable(Tensor::scalar(0, DType::int64, Device::cpu()), name_ + "/iteration", false);
  if (o.learning_rate.is_schedule())
    schedule_ = o.learning_rate.schedule();
  else
    learning_rate_var_ =
        Variable(Tensor::scalar(o.learning_rate.value(), DType::float32, Device::cpu()), name_ + "/learning_rate", false);
}

// ---- learning rate and step ----

int64_t Optimizer::iterations() const { return iterations_var_.value().data<int64_t>()[0]; }

void Optimizer::set_iterations(int64_t value) {
  Tensor t = iterations_var_.value();
  t.data<int64_t>()[0] = value;
  t.bump_version();
}

double Optimizer::learning_rate() const {
  if (schedule_) return (*schedule_)(Optimizer::iterations());
  return learning_rate_var_.value().item();
}

void Optimizer::set_learning_rate(double value) {
  if (schedule_)
    fail<TypeError>(name_ + ".set_learning_rate", "an optimizer created with a float learning rate",
                    "one using a " + schedule_->class_name() + " schedule",
                    "Create the optimizer with a float learning_rate to make it settable.");
  learning_rate_var_.assign(Tensor::scalar(value, DType::float32, Device::cpu()));
}

void Optimizer::set_learning_rate(schedules::SchedulePtr schedule) {
  if (!schedule) fail<ValueError>(name_ + ".set_learning_rate", "a schedule", "a null pointer");
  schedule_ = std::move(schedule);
  learning_rate_var_ = Variable();  // untracked, as Keras does
}

void Optimizer::exclude_from_weight_decay(const std::vector<std::string>& var_names) {
  if (built_)
    fail<StateError>(name_ + ".exclude_from_weight_decay", "a call before the optimizer is built", "a built optimizer");
  for (const auto& n : var_names) {
    try {
      std::regex check(n);
    } catch (const std::regex_error& e) {
      fail<ValueError>(name_ + ".exclude_from_weight_decay", "valid regular expressions", "'" + n + "'", e.what());
    }
  }
  exclude_patterns_ = var_names;
  decay_cache_.clear();
}

bool Optimizer::use_weight_decay(const Variable& var) const {
  if (exclude_patterns_.empty()) return true;
  auto it = decay_cache_.find(var.path());
  if (it != decay_cache_.end()) return it->second;
  bool use = true;
  const std::string name = var.name();
  // Compiled on a cache miss only, i.e. once per variable.
  for (const auto& p : exclude_patterns_)
    if (std::regex_search(name, std::regex(p))) use = false;
  decay_cache_[var.path()] = use;
  return use;
}

// ---- state ----

std::vector<std::string> Optimizer::flat_slot_names() const {
  std::vector<std::string> out;
  for (const auto& group : slot_layout()) out.insert(out.end(), group.begin(), group.end());
  return out;
}

Variable Optimizer::make_slot(const Variable& var, const std::string& slot) const {
  Tensor init = Tensor::full(var.shape(), slot_initial_value(slot), var.dtype(), var.value().device());
  return Variable(init, name_ + "/" + slot_variable_name(var.path(), slot), false);
}

void Optimizer::build(const std::vector<Variable>& vars) {
  const std::vector<std::string> names = flat_slot_names();
  std::vector<std::string> paths;
  std::unordered_map<std::string, std::vector<Variable>> slots;
  for (const auto& var : vars) {
    if (!var.trainable()) continue;  // frozen weights get no state
    const std::string& path = var.path();
    if (slots.count(path))
      fail<ValueError>(name_ + ".build", "variables with distinct paths", "'" + path + "' twice",
                       "Variable paths are the optimizer's keys; name layers uniquely.");
    std::vector<Variable> own;
    auto old = slots_.find(path);
    bool reusable = old != slots_.end() && !old->second.empty() && old->second[0].shape() == var.shape() &&
                    old->second[0].dtype() == var.dtype();
    if (reusable) {
      own = old->second;
    } else {
      for (const auto& n : names) own.push_back(make_slot(var, n));
    }
    paths.push_back(path);
    slots.emplace(path, std::move(own));
  }
  built_paths_ = std::move(paths);
  slots_ = std::move(slots);
  built_ = true;
}

void Optimizer::reset() {
  built_ = false;
  built_paths_.clear();
  slots_.clear();
  Optimizer::set_iterations(0);
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out{iterations_var_};
  if (learning_rate_var_.defined()) out.push_back(learning_rate_var_);
  // Groups in order; within a group the slots of one variable sit together.
  size_t offset = 0;
  for (const auto& group : slot_layout()) {
    for (const auto& path : built_paths_) {
      const auto& s = slots_.at(path);
      for (size_t k = 0; k < group.size(); ++k) out.push_back(s[offset + k]);
    }
    offset += group.size();
  }
  return out;
}

Variable Optimizer::slot(const std::string& var_path, const std::string& slot) const {
  auto it = slots_.find(var_path);
  if (it == slots_.end())
    fail<ValueError>(name_ + ".slot", "a variable the optimizer was built for", "'" + var_path + "'");
  const auto names = flat_slot_names();
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] == slot) return it->second[k];
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  fail<ValueError>(name_ + ".slot", "one of the slots (" + known + ")", "'" + slot + "'");
}

// ---- updates ----

void Optimizer::update_step(const Tensor& grad, const Variable& var, const std::vector<Variable>& slots,
                            const Attrs& attrs) {
  TensorList inputs{var.value(), grad};
  for (const auto& s : slots) inputs.push_back(s.value());
  run_op(update_op(), inputs, attrs);
}

void Optimizer::apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars) {
  TensorList grads;
  std::vector<Variable> vars;
  for (const auto& [g, v] : grads_and_vars) {
    grads.push_back(g);
    vars.push_back(v);
  }
  apply(grads, vars);
}

Tensor Optimizer::scale_loss(const Tensor& loss) const {
  return loss_scale_factor_ ? ops::multiply(loss, *loss_scale_factor_) : loss;
}

void Optimizer::apply(const TensorList& grads, const std::vector<Variable>& vars) {
  const std::string where = name_ + ".apply";
  if (grads.size() != vars.size())
    fail<ValueError>(where, "one gradient per variable (" + std::to_string(vars.size()) + ")",
                     std::to_string(grads.size()) + " gradients");
  if (grads.empty()) return;
  if (!built_) build(vars);

  // 1. The pairs that update: defined gradient, trainable (known) variable.
  struct Pair {
    Tensor grad;
    const Variable* var;
    const std::vector<Variable>* slots;
  };
  std::vector<Pair> pairs;
  bool any_grad = false;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    any_grad = true;
    const Variable& var = vars[i];
    if (!var.trainable()) continue;
    auto it = slots_.find(var.path());
    if (it == slots_.end())
      fail<ValueError>(where, "variables the optimizer was built for", "unknown variable '" + var.path() + "'",
                       "After changing which weights are trainable, re-compile or call build() with the new set.");
    if (grads[i].shape() != var.shape())
      fail<ShapeError>(where, "a gradient of shape " + shape_str(var.shape()) + " for variable '" + var.path() + "'",
                       shape_str(grads[i].shape()));
    // Detached so that a gradient taken with create_graph records nothing here.
    Tensor g = grads[i].detach();
    if (g.dtype() != var.dtype()) g = g.astype(var.dtype());
    pairs.push_back({g.contiguous(), &var, &it->second});
  }
  if (!any_grad)
    fail<ValueError>(where, "a gradient for at least one variable", "none",
                     "Check that the loss depends on the trainable weights.");

  // 2. Gradient scale factors: loss-scale unscaling, then clipping by norm.
  const double unscale = loss_scale_factor_ ? 1.0 / *loss_scale_factor_ : 1.0;
  std::vector<double> scale(pairs.size(), unscale);
  if (clipnorm_ && *clipnorm_ > 0) {
    for (size_t i = 0; i < pairs.size(); ++i) {
      double norm = std::sqrt(sum_of_squares(pairs[i].grad)) * std::abs(unscale);
      scale[i] *= *clipnorm_ / std::max(norm, *clipnorm_);
    }
  } else if (global_clipnorm_ && *global_clipnorm_ > 0) {
    double total = 0;
    for (const auto& p : pairs) total += sum_of_squares(p.grad);
    double norm = std::sqrt(total) * std::abs(unscale);
    // A non-finite norm poisons every gradient with NaN, as Keras does, rather than hiding it.
    double factor = !std::isfinite(norm) ? std::nan("") : (norm > *global_clipnorm_ ? *global_clipnorm_ / norm : 1.0);
    for (auto& s : scale) s *= factor;
  }
  const double clip_value = clipvalue_ && *clipvalue_ > 0 ? *clipvalue_ : 0.0;

  // 3. One fused op per variable.
  const double lr = Optimizer::learning_rate();
  Attrs base;
  base.set("learning_rate", lr).set("step", Optimizer::iterations() + 1).set("clip_value", clip_value);
  update_attrs(base);
  for (size_t i = 0; i < pairs.size(); ++i) {
    Attrs attrs = base;
    attrs.set("grad_scale", scale[i]);
    attrs.set("decay", weight_decay_ && use_weight_decay(*pairs[i].var) ? lr * *weight_decay_ : 0.0);
    update_step(pairs[i].grad, *pairs[i].var, *pairs[i].slots, attrs);
  }
  Optimizer::set_iterations(Optimizer::iterations() + 1);
  // 4. Constraints, as Keras: right after the update, on the variables that were updated.
  for (const auto& p : pairs) {
    Variable var = *p.var;  // a handle on the same variable
    var.apply_constraint();
  }
}

// ---- config ----

json Optimizer::get_config() const {
  json lr = schedule_ ? schedules::serialize(*schedule_) : json(learning_rate_var_.value().item());
  return {{"name", name_},
          {"learning_rate", lr},
          {"weight_decay", optional_json(weight_decay_)},
          {"clipnorm", optional_json(clipnorm_)},
          {"global_clipnorm", optional_json(global_clipnorm_)},
          {"clipvalue", optional_json(clipvalue_)},
          {"use_ema", use_ema_},
          {"ema_momentum", ema_momentum_},
          {"ema_overwrite_frequency", optional_json(ema_overwrite_frequency_)},
          {"loss_scale_factor", optional_json(loss_scale_factor_)},
          {"gradient_accumulation_steps", optional_json(gradient_accumulation_steps_)}};
}

CommonOptions common_from_config(const json& c, double default_lr) {
  if (!c.is_object()) fail<ValueError>("optimizer config", "a JSON object", c.dump());
  auto num = [&](const char* key) -> std::optional<double> {
    auto it = c.find(key);
    if (it == c.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) fail<ValueError>("optimizer config", std::string("a number for '") + key + "'", it->dump());
    return it->get<double>();
  };
  auto integer = [&](const char* key) -> std::optional<int64_t> {
    auto v = num(key);
    return v ? std::optional<int64_t>(static_cast<int64_t>(*v)) : std::nullopt;
  };
  CommonOptions o;
  o.learning_rate = default_lr;
  // tf.keras 2 configs may spell the rate "lr".
  const char* lr_key = c.contains("learning_rate") ? "learning_rate" : "lr";
  if (auto it = c.find(lr_key); it != c.end() && !it->is_null()) {
    if (it->is_object()) o.learning_rate = schedules::deserialize(*it);
    else if (it->is_number()) o.learning_rate = it->get<double>();
    else fail<ValueError>("optimizer config", "a number or a schedule object for 'learning_rate'", it->dump());
  }
  o.weight_decay = num("weight_decay");
  o.clipnorm = num("clipnorm");
  o.clipvalue = num("clipvalue");
  o.global_clipnorm = num("global_clipnorm");
  if (auto it = c.find("use_ema"); it != c.end() && it->is_boolean()) o.use_ema = it->get<bool>();
  o.ema_momentum = num("ema_momentum").value_or(0.99);
  o.ema_overwrite_frequency = integer("ema_overwrite_frequency");
  o.loss_scale_factor = num("loss_scale_factor");
  o.gradient_accumulation_steps = integer("gradient_accumulation_steps");
  if (auto it = c.find("name"); it != c.end() && it->is_string()) o.name = it->get<std::string>();
  return o;
}

// ---- registry ----

namespace {
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::pair<std::string, OptimizerFactory>> by_lower;  // lower name -> (name, factory)
};
Registry& registry() {
  static Registry r;
  return r;
}

std::string known_list() {
  std::string out;
  for (const auto& n : known_optimizers()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

OptimizerFactory find_factory(const std::string& name, const std::string& where) {
  std::string key = name;
  if (auto pos = key.find('>'); pos != std::string::npos) key = key.substr(pos + 1);  // "Custom>Adam"
  key = lower(key);
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().by_lower.find(key);
    if (it != registry().by_lower.end()) return it->second.second;
  }
  fail<ValueError>(where, "a known optimizer (" + known_list() + ")", "'" + name + "'",
                   "Register custom optimizers with optimizers::register_optimizer.");
}
}  // namespace

void register_optimizer(const std::string& class_name, OptimizerFactory factory) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().by_lower[lower(class_name)] = {class_name, std::move(factory)};
}

std::vector<std::string> known_optimizers() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  std::vector<std::string> out;
  for (const auto& [k, v] : registry().by_lower) out.push_back(v.first);
  return out;
}

OptimizerPtr get(const std::string& name) { return find_factory(name, "optimizers::get")(json::object()); }

OptimizerPtr from_config(const json& object) {
  if (object.is_string()) return get(object.get<std::string>());
  if (!object.is_object() || !object.contains("class_name") || !object["class_name"].is_string())
    fail<ValueError>("optimizers::from_config", "an object with a string 'class_name'", object.dump());
  json config = object.contains("config") && object["config"].is_object() ? object["config"] : json::object();
  return find_factory(object["class_name"].get<std::string>(), "optimizers::from_config")(config);
}

json serialize(const Optimizer& optimizer) {
  return {{"module", "keras.optimizers"},
          {"class_name", optimizer.class_name()},
          {"config", optimizer.get_config()},
          {"registered_name", nullptr}};
}

}  // namespace keras::optimizers
