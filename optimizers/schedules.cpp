#include "optimizers/schedules.h"

#include <cmath>
#include <map>
#include <mutex>
#include <numbers>

#include "backend/errors.h"

namespace keras::optimizers::schedules {
namespace {

using nlohmann::json;

double required_number(const json& config, const std::string& cls, const std::string& key) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number())
    fail<ValueError>(cls + ".from_config", "a number for '" + key + "'",
                     it == config.end() ? std::string("no such key") : it->dump());
  return it->get<double>();
}

double optional_number(const json& config, const std::string& key, double fallback) {
  auto it = config.find(key);
  return it == config.end() || it->is_null() ? fallback : it->get<double>();
}

std::string optional_string(const json& config, const std::string& key, const std::string& fallback) {
  auto it = config.find(key);
  return it == config.end() || it->is_null() ? fallback : it->get<std::string>();
}

std::vector<double> number_list(const json& config, const std::string& cls, const std::string& key) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_array())
    fail<ValueError>(cls + ".from_config", "a list of numbers for '" + key + "'",
                     it == config.end() ? std::string("no such key") : it->dump());
  std::vector<double> out;
  for (const auto& v : *it) out.push_back(v.get<double>());
  return out;
}

// Python writes integral step counts as ints; keep that so a config survives a round trip.
json number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9e15) return json(static_cast<int64_t>(v));
  return json(v);
}

std::map<std::string, ScheduleFactory>& registry() {
  static std::map<std::string, ScheduleFactory> r = {
      {"ExponentialDecay", &ExponentialDecay::from_config},
      {"PiecewiseConstantDecay", &PiecewiseConstantDecay::from_config},
      {"CosineDecay", &CosineDecay::from_config},
  };
  return r;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

// ---- ExponentialDecay ----

ExponentialDecay::ExponentialDecay(double initial_learning_rate, double decay_steps, double decay_rate, bool staircase,
                                   std::string name)
    : initial_learning_rate_(initial_learning_rate),
      decay_steps_(decay_steps),
      decay_rate_(decay_rate),
      staircase_(staircase),
      name_(std::move(name)) {
  if (!(decay_steps > 0))
    fail<ValueError>("ExponentialDecay", "decay_steps > 0", std::to_string(decay_steps));
}

double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / decay_steps_;
  if (staircase_) p = std::floor(p);
  return initial_learning_rate_ * std::pow(decay_rate_, p);
}

json ExponentialDecay::get_config() const {
  return {{"initial_learning_rate", initial_learning_rate_},
          {"decay_steps", number(decay_steps_)},
          {"decay_rate", decay_rate_},
          {"staircase", staircase_},
          {"name", name_}};
}

SchedulePtr ExponentialDecay::from_config(const json& c) {
  const std::string cls = "ExponentialDecay";
  return std::make_shared<ExponentialDecay>(
      required_number(c, cls, "initial_learning_rate"), required_number(c, cls, "decay_steps"),
      required_number(c, cls, "decay_rate"), c.contains("staircase") && !c["staircase"].is_null() && c["staircase"].get<bool>(),
      optional_string(c, "name", cls));
}

// ---- PiecewiseConstantDecay ----

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values,
                                               std::string name)
    : boundaries_(std::move(boundaries)), values_(std::move(values)), name_(std::move(name)) {
  if (values_.size() != boundaries_.size() + 1)
    fail<ValueError>("PiecewiseConstantDecay", "len(values) == len(boundaries) + 1",
                     std::to_string(values_.size()) + " values for " + std::to_string(boundaries_.size()) +
                         " boundaries");
  for (size_t i = 1; i < boundaries_.size(); ++i)
    if (!(boundaries_[i] > boundaries_[i - 1]))
      fail<ValueError>("PiecewiseConstantDecay", "strictly increasing boundaries",
                       "boundary " + std::to_string(i) + " = " + std::to_string(boundaries_[i]) +
                           " after " + std::to_string(boundaries_[i - 1]));
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  double s = static_cast<double>(step);
  // The first boundary that the step has not passed selects the value (boundaries are inclusive).
  for (size_t i = 0; i < boundaries_.size(); ++i)
    if (s <= boundaries_[i]) return values_[i];
  return values_.back();
}

json PiecewiseConstantDecay::get_config() const {
  json b = json::array(), v = json::array();
  for (double x : boundaries_) b.push_back(number(x));
  for (double x : values_) v.push_back(x);
  return {{"boundaries", b}, {"values", v}, {"name", name_}};
}

SchedulePtr PiecewiseConstantDecay::from_config(const json& c) {
  const std::string cls = "PiecewiseConstantDecay";
  return std::make_shared<PiecewiseConstantDecay>(number_list(c, cls, "boundaries"), number_list(c, cls, "values"),
                                                  optional_string(c, "name", "PiecewiseConstant"));
}

// ---- CosineDecay ----

CosineDecay::CosineDecay(double initial_learning_rate, double decay_steps, double alpha, std::string name,
                         std::optional<double> warmup_target, double warmup_steps)
    : initial_learning_rate_(initial_learning_rate),
      decay_steps_(decay_steps),
      alpha_(alpha),
      name_(std::move(name)),
      warmup_target_(warmup_target),
      warmup_steps_(warmup_steps) {
  if (!(decay_steps > 0)) fail<ValueError>("CosineDecay", "decay_steps > 0", std::to_string(decay_steps));
  if (warmup_steps < 0) fail<ValueError>("CosineDecay", "warmup_steps >= 0", std::to_string(warmup_steps));
}

double CosineDecay::operator()(int64_t step_in) const {
  auto decay = [&](double step, double from_lr) {
    double completed = step / decay_steps_;
    double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * completed));
    return from_lr * ((1.0 - alpha_) * cosine + alpha_);
  };
  double step = static_cast<double>(step_in);
  if (!warmup_target_) return decay(std::min(step, decay_steps_), initial_learning_rate_);
  step = std::min(step, decay_steps_ + warmup_steps_);
  if (step < warmup_steps_) {
    // Linear ramp from the initial rate to the warm-up target.
    double completed = step / warmup_steps_;
    return (*warmup_target_ - initial_learning_rate_) * completed + initial_learning_rate_;
  }
  return decay(step - warmup_steps_, *warmup_target_);
}

json CosineDecay::get_config() const {
  return {{"initial_learning_rate", initial_learning_rate_},
          {"decay_steps", number(decay_steps_)},
          {"alpha", alpha_},
          {"name", name_},
          {"warmup_target", warmup_target_ ? json(*warmup_target_) : json(nullptr)},
          {"warmup_steps", number(warmup_steps_)}};
}

SchedulePtr CosineDecay::from_config(const json& c) {
  const std::string cls = "CosineDecay";
  std::optional<double> target;
  if (c.contains("warmup_target") && !c["warmup_target"].is_null()) target = c["warmup_target"].get<double>();
  return std::make_shared<CosineDecay>(required_number(c, cls, "initial_learning_rate"),
                                       required_number(c, cls, "decay_steps"), optional_number(c, "alpha", 0.0),
                                       optional_string(c, "name", cls), target, optional_number(c, "warmup_steps", 0));
}

// ---- serialization ----

json serialize(const LearningRateSchedule& schedule) {
  return {{"module", "keras.optimizers.schedules"},
          {"class_name", schedule.class_name()},
          {"config", schedule.get_config()},
          {"registered_name", nullptr}};
}

SchedulePtr deserialize(const json& object) {
  if (!object.is_object() || !object.contains("class_name") || !object["class_name"].is_string())
    fail<ValueError>("schedules::deserialize", "an object with a string 'class_name'", object.dump());
  std::string cls = object["class_name"].get<std::string>();
  // tf.keras 2.11+ writes registered built-ins as "Custom>Name".
  if (auto pos = cls.find('>'); pos != std::string::npos) cls = cls.substr(pos + 1);
  json config = object.contains("config") ? object["config"] : json::object();
  ScheduleFactory factory;
  std::string known;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(cls);
    if (it != registry().end()) factory = it->second;
    for (const auto& [name, f] : registry()) known += (known.empty() ? "" : ", ") + name;
  }
  if (!factory)
    fail<ValueError>("schedules::deserialize", "a known learning-rate schedule (" + known + ")", "'" + cls + "'",
                     "Register custom schedules with schedules::register_schedule.");
  return factory(config);
}

void register_schedule(const std::string& class_name, ScheduleFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[class_name] = std::move(factory);
}

}  // namespace keras::optimizers::schedules
