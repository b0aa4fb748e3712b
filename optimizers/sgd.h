// SGD (keras.optimizers.SGD): plain, momentum and Nesterov gradient descent with Keras 3's rule
//   m = momentum * m - lr * g;  var += m                       (momentum > 0)
//   m = momentum * m - lr * g;  var += momentum * m - lr * g   (nesterov)
//   var -= lr * g                                              (momentum == 0, no slot)
// Slot: "momentum" per variable when momentum != 0.
#pragma once
#include "optimizers/optimizer.h"

namespace keras::optimizers {

struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;  // in [0, 1]
  bool nesterov = false;
  KERAS_OPTIMIZER_COMMON_FIELDS(std::nullopt);
};

class SGDImpl : public Optimizer {
 public:
  // Throws ValueError for momentum outside [0, 1] (and the base class's errors).
  explicit SGDImpl(SGDOptions options = {});
  std::string class_name() const override { return "SGD"; }
  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }
  nlohmann::json get_config() const override;
  static OptimizerPtr from_config(const nlohmann::json& config);

 protected:
  std::vector<std::vector<std::string>> slot_layout() const override;
  const OpDef& update_op() const override;
  void update_attrs(Attrs& attrs) const override;

 private:
  double momentum_;
  bool nesterov_;
};

std::shared_ptr<SGDImpl> SGD(SGDOptions options = {});

}  // namespace keras::optimizers
