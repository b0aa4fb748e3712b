// AdamW (keras.optimizers.AdamW): Adam with decoupled weight decay, which Keras 3 applies in the
// base class before the Adam rule (var -= lr * weight_decay * var); weight_decay is required and
// defaults to 0.004.
#pragma once
#include "optimizers/adam.h"

namespace keras::optimizers {

struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  KERAS_OPTIMIZER_COMMON_FIELDS(0.004);
};

class AdamWImpl : public AdamImpl {
 public:
  // Throws ValueError when weight_decay is unset.
  explicit AdamWImpl(AdamWOptions options = {});
  std::string class_name() const override { return "AdamW"; }
  static OptimizerPtr from_config(const nlohmann::json& config);
};

std::shared_ptr<AdamWImpl> AdamW(AdamWOptions options = {});

}  // namespace keras::optimizers
