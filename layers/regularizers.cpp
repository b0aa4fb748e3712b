#include "layers/regularizers.h"

#include <cmath>
#include <map>

#include "backend/ops.h"
#include "layers/layer_config.h"

namespace keras::regularizers {

L1L2::L1L2(double l1, double l2) : l1_(l1), l2_(l2) {
  if (!(l1_ >= 0) || !std::isfinite(l1_)) fail<ValueError>(class_name(), "l1 >= 0", std::to_string(l1_));
  if (!(l2_ >= 0) || !std::isfinite(l2_)) fail<ValueError>(class_name(), "l2 >= 0", std::to_string(l2_));
}

Tensor L1L2::operator()(const Tensor& w) const {
  Tensor penalty;
  if (l1_ > 0) penalty = ops::multiply(ops::sum(ops::abs(w)), l1_);
  if (l2_ > 0) {
    Tensor t = ops::multiply(ops::sum(ops::square(w)), l2_);
    penalty = penalty.defined() ? ops::add(penalty, t) : t;
  }
  // Both factors zero: still a scalar of w's dtype, so callers can always add it up.
  return penalty.defined() ? penalty : Tensor::zeros({}, w.dtype(), w.device());
}

namespace {
double num(const json& c, const char* key, double fallback) {
  return c.contains(key) && c[key].is_number() ? c[key].get<double>() : fallback;
}

std::map<std::string, RegularizerFactory>& table() {
  static std::map<std::string, RegularizerFactory> t = [] {
    std::map<std::string, RegularizerFactory> m;
    RegularizerFactory l1 = [](const json& c) { return std::make_shared<L1>(num(c, "l1", 0.01)); };
    RegularizerFactory l2 = [](const json& c) { return std::make_shared<L2>(num(c, "l2", 0.01)); };
    RegularizerFactory l1l2 = [](const json& c) { return std::make_shared<L1L2>(num(c, "l1", 0.0), num(c, "l2", 0.0)); };
    m["L1"] = m["l1"] = l1;
    m["L2"] = m["l2"] = l2;
    m["L1L2"] = m["l1_l2"] = l1l2;  // Keras 3: the alias is the class, factors default to 0
    return m;
  }();
  return t;
}

RegularizerPtr make(const std::string& name, const json& config, const std::string& where) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string known;
    for (const auto& n : known_names()) known += (known.empty() ? "" : ", ") + n;
    fail<ValueError>(where, "a known regularizer", "'" + name + "'", "Known: " + known + ".");
  }
  return it->second(config);
}
}  // namespace

void register_regularizer(const std::string& name, RegularizerFactory factory) { table()[name] = std::move(factory); }

std::vector<std::string> known_names() {
  std::vector<std::string> out;
  for (const auto& [n, f] : table()) out.push_back(n);
  return out;
}

RegularizerPtr get(const std::string& name) { return make(name, json::object(), "regularizers::get"); }

RegularizerPtr from_config(const json& j) {
  if (j.is_null()) return nullptr;
  auto [name, config] = config::unwrap_object(j, "regularizers::from_config");
  return make(name, config, "regularizers::from_config");
}

json serialize(const RegularizerPtr& reg) {
  if (!reg) return nullptr;
  return config::keras_object("keras.regularizers", reg->class_name(), reg->get_config());
}

}  // namespace keras::regularizers
