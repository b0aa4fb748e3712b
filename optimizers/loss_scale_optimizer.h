// LossScaleOptimizer (keras.optimizers.LossScaleOptimizer): dynamic loss scaling for float16
// compute, whose small gradients would otherwise flush to zero.
//
// scale_loss(loss) = loss * scale. apply(grads, vars): when every gradient is finite, the inner
// optimizer applies grads / scale and, after `dynamic_growth_steps` such steps in a row, the
// scale doubles; otherwise the step is skipped (no weight, slot or inner iteration changes) and
// the scale halves. Model::compile wraps the optimizer in one under the mixed_float16 policy, as
// Keras does. learning_rate() and iterations() are the inner optimizer's. variables() are Keras
// 3's, in its order: its own iteration (every apply), learning_rate (0), step_counter and
// dynamic_scale, then the inner optimizer's; so the scale is saved and restored with the rest.
// Reads Keras 3's "LossScaleOptimizer" and tf_keras's "LossScaleOptimizerV3" configs.
#pragma once
#include "optimizers/optimizer.h"

namespace keras::optimizers {

struct LossScaleOptimizerOptions {
  double initial_scale = 32768.0;  // 2^15, Keras's default
  int64_t dynamic_growth_steps = 2000;
  std::string name;  // empty: "loss_scale_optimizer"
};

class LossScaleOptimizerImpl : public Optimizer {
 public:
  // ValueError when `inner` is null or itself a LossScaleOptimizer, initial_scale <= 0 or
  // dynamic_growth_steps < 1.
  LossScaleOptimizerImpl(OptimizerPtr inner, LossScaleOptimizerOptions options = {});
  std::string class_name() const override { return "LossScaleOptimizer"; }
  const OptimizerPtr& inner_optimizer() const { return inner_; }
  double dynamic_scale() const;
  int64_t step_counter() const;

  Tensor scale_loss(const Tensor& loss) const override;
  void apply(const TensorList& grads, const std::vector<Variable>& vars) override;
  void build(const std::vector<Variable>& vars) override { inner_->build(vars); }
  bool built() const override { return inner_->built(); }
  void reset() override;
  std::vector<Variable> variables() const override;
  int64_t iterations() const override { return inner_->iterations(); }
  void set_iterations(int64_t value) override { inner_->set_iterations(value); }
  double learning_rate() const override { return inner_->learning_rate(); }
  void set_learning_rate(double value) override { inner_->set_learning_rate(value); }
  void set_learning_rate(schedules::SchedulePtr schedule) override { inner_->set_learning_rate(std::move(schedule)); }
  nlohmann::json get_config() const override;
  static OptimizerPtr from_config(const nlohmann::json& config);

 protected:
  // Never used: apply() hands every update to the inner optimizer.
  std::vector<std::vector<std::string>> slot_layout() const override { return {}; }
  const OpDef& update_op() const override;
  void update_attrs(Attrs&) const override {}

 private:
  OptimizerPtr inner_;
  double initial_scale_;
  int64_t growth_steps_;
  Variable step_counter_, dynamic_scale_;  // int64 and float32 scalars, on the host
};

std::shared_ptr<LossScaleOptimizerImpl> LossScaleOptimizer(OptimizerPtr inner, LossScaleOptimizerOptions options = {});

}  // namespace keras::optimizers
