#include "optimizers/rmsprop.h"

namespace keras::optimizers {

RMSpropImpl::RMSpropImpl(RMSpropOptions o)
    : Optimizer(to_common(o), "rmsprop"), rho_(o.rho), momentum_(o.momentum), epsilon_(o.epsilon), centered_(o.centered) {}

std::vector<std::vector<std::string>> RMSpropImpl::slot_layout() const {
  std::vector<std::vector<std::string>> layout{{"velocity"}};
  if (momentum_ > 0) layout.push_back({"momentum"});
  if (centered_) layout.push_back({"average_gradient"});
  return layout;
}

const OpDef& RMSpropImpl::update_op() const {
  static const OpDef& def = OpRegistry::instance().find("rmsprop_update");
  return def;
}

void RMSpropImpl::update_attrs(Attrs& attrs) const {
  attrs.set("rho", rho_).set("momentum", momentum_).set("epsilon", epsilon_).set("centered", centered_);
}

nlohmann::json RMSpropImpl::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["rho"] = rho_;
  c["momentum"] = momentum_;
  c["epsilon"] = epsilon_;
  c["centered"] = centered_;
  return c;
}

OptimizerPtr RMSpropImpl::from_config(const nlohmann::json& c) {
  RMSpropOptions o;
  assign_common(o, common_from_config(c, 0.001));
  if (auto it = c.find("rho"); it != c.end() && it->is_number()) o.rho = it->get<double>();
  if (auto it = c.find("momentum"); it != c.end() && it->is_number()) o.momentum = it->get<double>();
  if (auto it = c.find("epsilon"); it != c.end() && it->is_number()) o.epsilon = it->get<double>();
  if (auto it = c.find("centered"); it != c.end() && it->is_boolean()) o.centered = it->get<bool>();
  return std::make_shared<RMSpropImpl>(std::move(o));
}

std::shared_ptr<RMSpropImpl> RMSprop(RMSpropOptions options) {
  return std::make_shared<RMSpropImpl>(std::move(options));
}

namespace {
const detail::OptimizerRegistrar registrar("RMSprop", &RMSpropImpl::from_config);
}

}  // namespace keras::optimizers
