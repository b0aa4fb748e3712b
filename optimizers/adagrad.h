// Adagrad (keras.optimizers.Adagrad) with Keras 3's rule:
//   acc += g^2;  var -= lr * g / sqrt(acc + epsilon)
// Slot: "accumulator" per variable, starting at initial_accumulator_value.
#pragma once
#include "optimizers/optimizer.h"

namespace keras::optimizers {

struct AdagradOptions {
  LearningRate learning_rate = 0.001;
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
  KERAS_OPTIMIZER_COMMON_FIELDS(std::nullopt);
};

class AdagradImpl : public Optimizer {
 public:
  // Throws ValueError for a negative initial_accumulator_value.
  explicit AdagradImpl(AdagradOptions options = {});
  std::string class_name() const override { return "Adagrad"; }
  double initial_accumulator_value() const { return initial_accumulator_value_; }
  double epsilon() const { return epsilon_; }
  nlohmann::json get_config() const override;
  static OptimizerPtr from_config(const nlohmann::json& config);

 protected:
  std::vector<std::vector<std::string>> slot_layout() const override { return {{"accumulator"}}; }
  double slot_initial_value(const std::string&) const override { return initial_accumulator_value_; }
  const OpDef& update_op() const override;
  void update_attrs(Attrs& attrs) const override;

 private:
  double initial_accumulator_value_, epsilon_;
};

std::shared_ptr<AdagradImpl> Adagrad(AdagradOptions options = {});

}  // namespace keras::optimizers
