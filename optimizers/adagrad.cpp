#include "optimizers/adagrad.h"

namespace keras::optimizers {

AdagradImpl::AdagradImpl(AdagradOptions o)
    : Optimizer(to_common(o), "adagrad"), initial_accumulator_value_(o.initial_accumulator_value), epsilon_(o.epsilon) {
  // A negative start makes sqrt(acc + eps) NaN on the first small gradient.
  if (o.initial_accumulator_value < 0)
    fail<ValueError>("Adagrad optimizer", "initial_accumulator_value >= 0", std::to_string(o.initial_accumulator_value));
}

const OpDef& AdagradImpl::update_op() const {
  static const OpDef& def = OpRegistry::instance().find("adagrad_update");
  return def;
}

void AdagradImpl::update_attrs(Attrs& attrs) const { attrs.set("epsilon", epsilon_); }

nlohmann::json AdagradImpl::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["initial_accumulator_value"] = initial_accumulator_value_;
  c["epsilon"] = epsilon_;
  return c;
}

OptimizerPtr AdagradImpl::from_config(const nlohmann::json& c) {
  AdagradOptions o;
  assign_common(o, common_from_config(c, 0.001));
  if (auto it = c.find("initial_accumulator_value"); it != c.end() && it->is_number())
    o.initial_accumulator_value = it->get<double>();
  if (auto it = c.find("epsilon"); it != c.end() && it->is_number()) o.epsilon = it->get<double>();
  return std::make_shared<AdagradImpl>(std::move(o));
}

std::shared_ptr<AdagradImpl> Adagrad(AdagradOptions options) {
  return std::make_shared<AdagradImpl>(std::move(options));
}

namespace {
const detail::OptimizerRegistrar registrar("Adagrad", &AdagradImpl::from_config);
}

}  // namespace keras::optimizers
