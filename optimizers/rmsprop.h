// RMSprop (keras.optimizers.RMSprop) with Keras 3's rule:
//   vel = rho * vel + (1 - rho) * g^2
//   centered: avg = rho * avg + (1 - rho) * g;  denom = vel - avg^2 + epsilon  (else vel + epsilon)
//   inc = lr * g / sqrt(denom)
//   momentum > 0: mom = momentum * mom + inc; var -= mom   (else var -= inc)
// Slots: "velocity" for all variables, then "momentum" for all (momentum > 0), then
// "average_gradient" for all (centered).
#pragma once
#include "optimizers/optimizer.h"

namespace keras::optimizers {

struct RMSpropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
  KERAS_OPTIMIZER_COMMON_FIELDS(std::nullopt);
};

class RMSpropImpl : public Optimizer {
 public:
  explicit RMSpropImpl(RMSpropOptions options = {});
  std::string class_name() const override { return "RMSprop"; }
  double rho() const { return rho_; }
  double momentum() const { return momentum_; }
  double epsilon() const { return epsilon_; }
  bool centered() const { return centered_; }
  nlohmann::json get_config() const override;
  static OptimizerPtr from_config(const nlohmann::json& config);

 protected:
  std::vector<std::vector<std::string>> slot_layout() const override;
  const OpDef& update_op() const override;
  void update_attrs(Attrs& attrs) const override;

 private:
  double rho_, momentum_, epsilon_;
  bool centered_;
};

std::shared_ptr<RMSpropImpl> RMSprop(RMSpropOptions options = {});

}  // namespace keras::optimizers
