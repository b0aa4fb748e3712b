// Learning-rate schedules (keras.optimizers.schedules): a learning rate that is a function of the
// optimizer's step (its `iterations` before the update). An optimizer holds one through a
// shared_ptr, evaluates it once per apply, and serialises it as a Keras object
//   {"module": "keras.optimizers.schedules", "class_name": ..., "config": ..., "registered_name": null}.
// The formulas are Keras 3's, evaluated in double precision.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace keras::optimizers::schedules {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The learning rate at optimizer step `step` (>= 0).
  virtual double operator()(int64_t step) const = 0;
  // Keras class name ("ExponentialDecay").
  virtual std::string class_name() const = 0;
  // Keras config (the keys the Python constructor takes).
  virtual nlohmann::json get_config() const = 0;
};

using SchedulePtr = std::shared_ptr<LearningRateSchedule>;

// initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored when `staircase`.
// Throws ValueError for decay_steps <= 0.
class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial_learning_rate, double decay_steps, double decay_rate, bool staircase = false,
                   std::string name = "ExponentialDecay");
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "ExponentialDecay"; }
  nlohmann::json get_config() const override;
  static SchedulePtr from_config(const nlohmann::json& config);

 private:
  double initial_learning_rate_, decay_steps_, decay_rate_;
  bool staircase_;
  std::string name_;
};

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// values.back() after the last boundary. Throws ValueError unless values.size() ==
// boundaries.size() + 1 and boundaries increase strictly.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values,
                         std::string name = "PiecewiseConstant");
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "PiecewiseConstantDecay"; }
  nlohmann::json get_config() const override;
  static SchedulePtr from_config(const nlohmann::json& config);

 private:
  std::vector<double> boundaries_, values_;
  std::string name_;
};

// Cosine decay from initial_learning_rate (or from warmup_target after a linear warm-up of
// warmup_steps steps) to alpha * that rate over decay_steps steps, constant afterwards.
// Throws ValueError for decay_steps <= 0 or warmup_steps < 0.
class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial_learning_rate, double decay_steps, double alpha = 0.0, std::string name = "CosineDecay",
              std::optional<double> warmup_target = std::nullopt, double warmup_steps = 0);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "CosineDecay"; }
  nlohmann::json get_config() const override;
  static SchedulePtr from_config(const nlohmann::json& config);

 private:
  double initial_learning_rate_, decay_steps_, alpha_;
  std::string name_;
  std::optional<double> warmup_target_;
  double warmup_steps_;
};

// The Keras 3 object form of `schedule`.
nlohmann::json serialize(const LearningRateSchedule& schedule);
// Rebuilds a schedule from a Keras 2 or 3 object ({"class_name", "config", ...}); throws
// ValueError naming the class and listing the known ones when it is not registered.
SchedulePtr deserialize(const nlohmann::json& object);

// Makes a user-written schedule loadable by class name.
using ScheduleFactory = std::function<SchedulePtr(const nlohmann::json& config)>;
void register_schedule(const std::string& class_name, ScheduleFactory factory);

}  // namespace keras::optimizers::schedules
