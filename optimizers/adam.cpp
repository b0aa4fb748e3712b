#include "optimizers/adam.h"

namespace keras::optimizers {

AdamImpl::AdamImpl(AdamOptions o) : AdamImpl(o, "adam") {}

AdamImpl::AdamImpl(const AdamOptions& o, const std::string& default_name)
    : Optimizer(to_common(o), default_name),
      beta_1_(o.beta_1),
      beta_2_(o.beta_2),
      epsilon_(o.epsilon),
      amsgrad_(o.amsgrad) {}

std::vector<std::vector<std::string>> AdamImpl::slot_layout() const {
  if (amsgrad_) return {{"momentum", "velocity"}, {"velocity_hat"}};
  return {{"momentum", "velocity"}};
}

const OpDef& AdamImpl::update_op() const {
  static const OpDef& def = OpRegistry::instance().find("adam_update");
  return def;
}

void AdamImpl::update_attrs(Attrs& attrs) const {
  attrs.set("beta_1", beta_1_).set("beta_2", beta_2_).set("epsilon", epsilon_).set("amsgrad", amsgrad_);
}

nlohmann::json AdamImpl::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = beta_1_;
  c["beta_2"] = beta_2_;
  c["epsilon"] = epsilon_;
  c["amsgrad"] = amsgrad_;
  return c;
}

void AdamImpl::read_adam_keys(const nlohmann::json& c, AdamOptions& o) {
  if (auto it = c.find("beta_1"); it != c.end() && it->is_number()) o.beta_1 = it->get<double>();
  if (auto it = c.find("beta_2"); it != c.end() && it->is_number()) o.beta_2 = it->get<double>();
  if (auto it = c.find("epsilon"); it != c.end() && it->is_number()) o.epsilon = it->get<double>();
  if (auto it = c.find("amsgrad"); it != c.end() && it->is_boolean()) o.amsgrad = it->get<bool>();
}

OptimizerPtr AdamImpl::from_config(const nlohmann::json& c) {
  AdamOptions o;
  assign_common(o, common_from_config(c, 0.001));
  read_adam_keys(c, o);
  return std::make_shared<AdamImpl>(std::move(o));
}

std::shared_ptr<AdamImpl> Adam(AdamOptions options) { return std::make_shared<AdamImpl>(std::move(options)); }

namespace {
const detail::OptimizerRegistrar registrar("Adam", &AdamImpl::from_config);
}

}  // namespace keras::optimizers
