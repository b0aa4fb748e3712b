#include "optimizers/sgd.h"

namespace keras::optimizers {

SGDImpl::SGDImpl(SGDOptions o) : Optimizer(to_common(o), "SGD"), momentum_(o.momentum), nesterov_(o.nesterov) {
  if (!(o.momentum >= 0 && o.momentum <= 1))
    fail<ValueError>("SGD optimizer", "momentum in [0, 1]", std::to_string(o.momentum));
}

std::vector<std::vector<std::string>> SGDImpl::slot_layout() const {
  if (momentum_ == 0) return {};
  return {{"momentum"}};
}

const OpDef& SGDImpl::update_op() const {
  static const OpDef& def = OpRegistry::instance().find("sgd_update");
  return def;
}

void SGDImpl::update_attrs(Attrs& attrs) const { attrs.set("momentum", momentum_).set("nesterov", nesterov_); }

nlohmann::json SGDImpl::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["momentum"] = momentum_;
  c["nesterov"] = nesterov_;
  return c;
}

OptimizerPtr SGDImpl::from_config(const nlohmann::json& c) {
  SGDOptions o;
  assign_common(o, common_from_config(c, 0.01));
  if (auto it = c.find("momentum"); it != c.end() && it->is_number()) o.momentum = it->get<double>();
  if (auto it = c.find("nesterov"); it != c.end() && it->is_boolean()) o.nesterov = it->get<bool>();
  return std::make_shared<SGDImpl>(std::move(o));
}

std::shared_ptr<SGDImpl> SGD(SGDOptions options) { return std::make_shared<SGDImpl>(std::move(options)); }

namespace {
const detail::OptimizerRegistrar registrar("SGD", &SGDImpl::from_config);
}

}  // namespace keras::optimizers
