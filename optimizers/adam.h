// Adam (keras.optimizers.Adam) with Keras 3's rule, t = iterations + 1:
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
//   amsgrad: v_hat = max(v_hat, v), used in place of v
//   var -= alpha * m / (sqrt(v) + epsilon)
// Slots: "momentum" and "velocity" interleaved per variable, then "velocity_hat" (amsgrad).
#pragma once
#include "optimizers/optimizer.h"

namespace keras::optimizers {

struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  KERAS_OPTIMIZER_COMMON_FIELDS(std::nullopt);
};

class AdamImpl : public Optimizer {
 public:
  explicit AdamImpl(AdamOptions options = {});
  std::string class_name() const override { return "Adam"; }
  double beta_1() const { return beta_1_; }
  double beta_2() const { return beta_2_; }
  double epsilon() const { return epsilon_; }
  bool amsgrad() const { return amsgrad_; }
  nlohmann::json get_config() const override;
  static OptimizerPtr from_config(const nlohmann::json& config);

 protected:
  AdamImpl(const AdamOptions& options, const std::string& default_name);
  // Reads Adam's own keys into `o` (the common ones are the caller's).
  static void read_adam_keys(const nlohmann::json& config, AdamOptions& o);
  std::vector<std::vector<std::string>> slot_layout() const override;
  const OpDef& update_op() const override;
  void update_attrs(Attrs& attrs) const override;

 private:
  double beta_1_, beta_2_, epsilon_;
  bool amsgrad_;
};

std::shared_ptr<AdamImpl> Adam(AdamOptions options = {});

}  // namespace keras::optimizers
