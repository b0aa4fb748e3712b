#include "optimizers/adamw.h"

namespace keras::optimizers {
namespace {

AdamOptions as_adam(const AdamWOptions& w) {
  if (!w.weight_decay)
    fail<ValueError>("AdamW optimizer", "a float weight_decay", "None", "AdamW needs weight_decay (default 0.004).");
  AdamOptions o;
  o.beta_1 = w.beta_1;
  o.beta_2 = w.beta_2;
  o.epsilon = w.epsilon;
  o.amsgrad = w.amsgrad;
  assign_common(o, to_common(w));
  return o;
}

}  // namespace

AdamWImpl::AdamWImpl(AdamWOptions o) : AdamImpl(as_adam(o), "adamw") {}

OptimizerPtr AdamWImpl::from_config(const nlohmann::json& c) {
  AdamOptions a;
  read_adam_keys(c, a);
  AdamWOptions o;
  o.beta_1 = a.beta_1;
  o.beta_2 = a.beta_2;
  o.epsilon = a.epsilon;
  o.amsgrad = a.amsgrad;
  CommonOptions common = common_from_config(c, 0.001);
  // A config without the key keeps AdamW's default; an explicit null is rejected by the constructor.
  if (!c.contains("weight_decay")) common.weight_decay = 0.004;
  assign_common(o, common);
  return std::make_shared<AdamWImpl>(std::move(o));
}

std::shared_ptr<AdamWImpl> AdamW(AdamWOptions options) { return std::make_shared<AdamWImpl>(std::move(options)); }

namespace {
const detail::OptimizerRegistrar registrar("AdamW", &AdamWImpl::from_config);
}

}  // namespace keras::optimizers
