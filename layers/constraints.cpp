#include "layers/constraints.h"

#include <cmath>
#include <map>

#include "backend/ops.h"
#include "layers/layer_config.h"

namespace keras::constraints {

// ---- axis ----

json Axis::to_json() const {
  switch (form_) {
    case Form::integer: return json(axes_[0]);
    case Form::list: return json(axes_);
    case Form::all: break;
  }
  return nullptr;
}

Axis Axis::from_json(const json& j, const std::string& where) {
  if (j.is_null()) return Axis(nullptr);
  if (j.is_number_integer()) return Axis(j.get<int64_t>());
  if (j.is_array()) {
    std::vector<int64_t> axes;
    for (const auto& a : j) {
      if (!a.is_number_integer()) fail<ValueError>(where, "'axis' as an integer, a list of integers or null", j.dump());
      axes.push_back(a.get<int64_t>());
    }
    return Axis(std::move(axes));
  }
  fail<ValueError>(where, "'axis' as an integer, a list of integers or null", j.dump());
}

// ---- the constraints ----

Tensor NormConstraint::norms(const Tensor& w) const {
  const int64_t rank = w.rank();
  std::vector<int64_t> axes;
  if (axis_.all()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  } else {
    for (int64_t a : axis_.axes()) {
      if (a < -rank || a >= rank)
        fail<ValueError>(class_name(), "axes in [" + std::to_string(-rank) + ", " + std::to_string(rank) + ")",
                         "axis " + axis_.to_json().dump() + " for a weight of shape " + shape_str(w.shape()),
                         "Choose the axes of the weight's input dimensions (Conv2D kernel: [0, 1, 2]).");
      axes.push_back(a < 0 ? a + rank : a);
    }
  }
  Tensor sq = ops::square(w);
  // An empty axis list reduces nothing (as Keras's sum over axis=[]): each element is its own norm.
  return ops::sqrt(axes.empty() && rank > 0 ? sq : ops::sum(sq, axes, /*keepdims=*/true));
}

namespace {
void check_finite(const std::string& where, const char* name, double v) {
  if (!std::isfinite(v)) fail<ValueError>(where, std::string("a finite ") + name, std::to_string(v));
}
}  // namespace

MaxNorm::MaxNorm(double max_value, Axis axis) : NormConstraint(std::move(axis)), max_value_(max_value) {
  check_finite(class_name(), "max_value", max_value_);
  if (max_value_ < 0) fail<ValueError>(class_name(), "max_value >= 0", std::to_string(max_value_));
}

Tensor MaxNorm::operator()(const Tensor& w) const {
  Tensor n = norms(w);
  Tensor desired = ops::clip(n, 0.0, max_value_);
  return ops::multiply(w, ops::divide(desired, ops::add(n, kEpsilon)));
}

Tensor NonNeg::operator()(const Tensor& w) const {
  return ops::maximum(w, Tensor::zeros({}, w.dtype(), w.device()));
}

Tensor UnitNorm::operator()(const Tensor& w) const { return ops::divide(w, ops::add(norms(w), kEpsilon)); }

MinMaxNorm::MinMaxNorm(double min_value, double max_value, double rate, Axis axis)
    : NormConstraint(std::move(axis)), min_value_(min_value), max_value_(max_value), rate_(rate) {
  check_finite(class_name(), "min_value", min_value_);
  check_finite(class_name(), "max_value", max_value_);
  check_finite(class_name(), "rate", rate_);
  if (min_value_ > max_value_)
    fail<ValueError>(class_name(), "min_value <= max_value",
                     "min_value " + std::to_string(min_value_) + " and max_value " + std::to_string(max_value_));
}

Tensor MinMaxNorm::operator()(const Tensor& w) const {
  Tensor n = norms(w);
  Tensor desired = ops::add(ops::multiply(ops::clip(n, min_value_, max_value_), rate_), ops::multiply(n, 1.0 - rate_));
  return ops::multiply(w, ops::divide(desired, ops::add(n, kEpsilon)));
}

// ---- lookup and serialization ----

namespace {
double num(const json& c, const char* key, double fallback, const std::string& where) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_number()) fail<ValueError>(where, std::string("a number for '") + key + "'", c[key].dump());
  return c[key].get<double>();
}

Axis axis_of(const json& c, const std::string& where) {
  return c.contains("axis") ? Axis::from_json(c["axis"], where) : Axis(0);
}

std::map<std::string, ConstraintFactory>& table() {
  static std::map<std::string, ConstraintFactory> t = [] {
    std::map<std::string, ConstraintFactory> m;
    ConstraintFactory max_norm = [](const json& c) {
      return std::make_shared<MaxNorm>(num(c, "max_value", 2.0, "MaxNorm config"), axis_of(c, "MaxNorm config"));
    };
    ConstraintFactory non_neg = [](const json&) { return std::make_shared<NonNeg>(); };
    ConstraintFactory unit_norm = [](const json& c) { return std::make_shared<UnitNorm>(axis_of(c, "UnitNorm config")); };
    ConstraintFactory min_max_norm = [](const json& c) {
      const std::string where = "MinMaxNorm config";
      return std::make_shared<MinMaxNorm>(num(c, "min_value", 0.0, where), num(c, "max_value", 1.0, where),
                                          num(c, "rate", 1.0, where), axis_of(c, where));
    };
    ConstraintFactory identity = [](const json&) { return std::make_shared<Constraint>(); };
    m["MaxNorm"] = m["max_norm"] = m["maxnorm"] = max_norm;  // "maxnorm" etc.: Keras 2 legacy aliases
    m["NonNeg"] = m["non_neg"] = m["nonneg"] = non_neg;
    m["UnitNorm"] = m["unit_norm"] = m["unitnorm"] = unit_norm;
    m["MinMaxNorm"] = m["min_max_norm"] = min_max_norm;
    m["Constraint"] = m["constraint"] = identity;  // Keras 3 registers its identity base class too
    return m;
  }();
  return t;
}

ConstraintPtr make(const std::string& name, const json& config, const std::string& where) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string known;
    for (const auto& n : known_names()) known += (known.empty() ? "" : ", ") + n;
    fail<ValueError>(where, "a known constraint", "'" + name + "'", "Known: " + known + ".");
  }
  return it->second(config);
}
}  // namespace

void register_constraint(const std::string& name, ConstraintFactory factory) { table()[name] = std::move(factory); }

std::vector<std::string> known_names() {
  std::vector<std::string> out;
  for (const auto& [n, f] : table()) out.push_back(n);
  return out;
}

ConstraintPtr get(const std::string& name) { return make(name, json::object(), "constraints::get"); }

ConstraintPtr from_config(const json& j) {
  if (j.is_null()) return nullptr;
  auto [name, config] = config::unwrap_object(j, "constraints::from_config");
  return make(name, config, "constraints::from_config");
}

json serialize(const ConstraintPtr& constraint) {
  if (!constraint) return nullptr;
  return config::keras_object("keras.constraints", constraint->class_name(), constraint->get_config());
}

}  // namespace keras::constraints
