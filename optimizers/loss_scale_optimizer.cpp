#include "optimizers/loss_scale_optimizer.h"

#include <cmath>
#include <limits>

#include "backend/autodiff.h"
#include "backend/ops.h"

namespace keras::optimizers {

using nlohmann::json;

LossScaleOptimizerImpl::LossScaleOptimizerImpl(OptimizerPtr inner, LossScaleOptimizerOptions o)
    : Optimizer(CommonOptions{.learning_rate = 0.0, .name = o.name}, "loss_scale_optimizer"),
      inner_(std::move(inner)),
      initial_scale_(o.initial_scale),
      growth_steps_(o.dynamic_growth_steps),
      step_counter_(Tensor::scalar(0, DType::int64, Device::cpu()), name() + "/step_counter", false),
      dynamic_scale_(Tensor::scalar(o.initial_scale, DType::float32, Device::cpu()), name() + "/dynamic_scale", false) {
  const std::string where = "LossScaleOptimizer";
  if (!inner_) fail<ValueError>(where, "an inner optimizer", "none");
  if (dynamic_cast<const LossScaleOptimizerImpl*>(inner_.get()))
    fail<ValueError>(where, "an inner optimizer that scales no loss itself", "a LossScaleOptimizer");
  if (!(o.initial_scale > 0) || !std::isfinite(o.initial_scale))
    fail<ValueError>(where, "initial_scale > 0", std::to_string(o.initial_scale));
  if (o.dynamic_growth_steps < 1)
    fail<ValueError>(where, "dynamic_growth_steps >= 1", std::to_string(o.dynamic_growth_steps));
}

double LossScaleOptimizerImpl::dynamic_scale() const { return dynamic_scale_.value().item(); }
int64_t LossScaleOptimizerImpl::step_counter() const { return static_cast<int64_t>(step_counter_.value().item()); }

std::vector<Variable> LossScaleOptimizerImpl::variables() const {
  std::vector<Variable> out = Optimizer::variables();  // iteration, learning_rate (no slots)
  out.push_back(step_counter_);
  out.push_back(dynamic_scale_);
  for (auto& v : inner_->variables()) out.push_back(v);
  return out;
}

Tensor LossScaleOptimizerImpl::scale_loss(const Tensor& loss) const {
  return inner_->scale_loss(ops::multiply(loss, dynamic_scale()));
}

void LossScaleOptimizerImpl::apply(const TensorList& grads, const std::vector<Variable>& vars) {
  bool finite = true;
  {
    NoGradGuard no_grad;
    for (const auto& g : grads)
      if (g.defined() && finite) finite = std::isfinite(ops::sum(ops::abs(g.astype(DType::float64))).item());
  }
  Optimizer::set_iterations(Optimizer::iterations() + 1);
  const double scale = dynamic_scale();
  auto set = [](Variable& v, double value) { v.assign(Tensor::scalar(value, v.dtype(), Device::cpu())); };
  if (!finite) {  // an overflow in the scaled backward pass: skip the step, try a smaller scale
    set(dynamic_scale_, scale / 2);
    set(step_counter_, 0);
    return;
  }
  TensorList unscaled;
  unscaled.reserve(grads.size());
  {
    NoGradGuard no_grad;
    for (const auto& g : grads) unscaled.push_back(g.defined() ? ops::multiply(g.detach(), 1.0 / scale) : Tensor());
  }
  inner_->apply(unscaled, vars);
  const int64_t good = step_counter() + 1;
  set(step_counter_, good >= growth_steps_ ? 0 : static_cast<double>(good));
  if (good >= growth_steps_) set(dynamic_scale_, scale * 2);
}

void LossScaleOptimizerImpl::reset() {
  inner_->reset();
  Optimizer::reset();
  dynamic_scale_.assign(Tensor::scalar(initial_scale_, DType::float32, Device::cpu()));
  step_counter_.assign(Tensor::scalar(0, DType::int64, Device::cpu()));
}

json LossScaleOptimizerImpl::get_config() const {
  return {{"name", name()},
          {"inner_optimizer", serialize(*inner_)},
          {"initial_scale", initial_scale_},
          {"dynamic_growth_steps", growth_steps_}};
}

OptimizerPtr LossScaleOptimizerImpl::from_config(const json& c) {
  if (!c.contains("inner_optimizer"))
    fail<ValueError>("LossScaleOptimizer config", "an 'inner_optimizer'", c.dump());
  // tf_keras's fixed-scale form (dynamic false) has no growth: an interval no run reaches.
  const bool fixed = c.contains("dynamic") && c["dynamic"].is_boolean() && !c["dynamic"].get<bool>();
  return LossScaleOptimizer(optimizers::from_config(c["inner_optimizer"]),
                            {.initial_scale = c.value("initial_scale", 32768.0),
                             .dynamic_growth_steps = fixed ? std::numeric_limits<int64_t>::max()
                                                           : c.value("dynamic_growth_steps", int64_t{2000}),
                             .name = c.value("name", std::string())});
}

const OpDef& LossScaleOptimizerImpl::update_op() const {
  fail<StateError>("LossScaleOptimizer", "updates through the inner optimizer", "a direct update");
}

std::shared_ptr<LossScaleOptimizerImpl> LossScaleOptimizer(OptimizerPtr inner, LossScaleOptimizerOptions options) {
  return std::make_shared<LossScaleOptimizerImpl>(std::move(inner), std::move(options));
}

namespace {
const detail::OptimizerRegistrar registrar("LossScaleOptimizer", &LossScaleOptimizerImpl::from_config);
const detail::OptimizerRegistrar registrar_v3("LossScaleOptimizerV3", &LossScaleOptimizerImpl::from_config);
}  // namespace

}  // namespace keras::optimizers
