// Keras weight constraints (keras.constraints): MaxNorm, NonNeg, UnitNorm, MinMaxNorm. A
// constraint projects a weight after each optimizer update (Keras's variable.constraint); a layer
// attaches it to the variable through add_weight, and Optimizer::apply runs it.
//
// Norms are L2 norms over `axis` (keepdims), as Keras: for a Dense kernel (in, units) axis 0
// constrains each unit's incoming vector; for a Conv2D kernel (kh, kw, in, out) use {0, 1, 2}.
// Scaling divides by (kEpsilon + norm), Keras's backend.epsilon(), so a zero vector stays zero.
#pragma once
#include <concepts>
#include <functional>
#include <string>
#include <vector>

#include "layers/initializer.h"

namespace keras::constraints {

// Keras's backend.epsilon() (1e-7), added to every norm a constraint divides by.
inline constexpr double kEpsilon = 1e-7;

// The axes a norm is taken over: one int, a list, or every axis (Keras's axis=None), written
// back in the form given (`"axis": 0`, `"axis": [0, 1, 2]`, `"axis": null`). Negative axes
// count from the end; an empty list reduces nothing (the norm of each element is |w|).
class Axis {
 public:
  Axis(int64_t axis = 0) : axes_{axis}, form_(Form::integer) {}
  Axis(int axis) : Axis(int64_t{axis}) {}  // a literal 0 must not read as a null pointer
  Axis(std::vector<int64_t> axes) : axes_(std::move(axes)), form_(Form::list) {}
  Axis(std::initializer_list<int64_t> axes) : axes_(axes), form_(Form::list) {}
  Axis(std::nullptr_t) : form_(Form::all) {}
  bool all() const { return form_ == Form::all; }
  const std::vector<int64_t>& axes() const { return axes_; }  // empty when all()
  json to_json() const;
  // From an int, a list of ints or null; ValueError naming `where` otherwise.
  static Axis from_json(const json& j, const std::string& where);

 private:
  enum class Form { integer, list, all };
  std::vector<int64_t> axes_;
  Form form_;
};

// Base of the norm constraints: owns the axis; norms(w) = sqrt(sum(w^2, axis, keepdims)).
// ValueError (naming the class and w's shape) when an axis is outside [-rank, rank).
class NormConstraint : public Constraint {
 public:
  explicit NormConstraint(Axis axis) : axis_(std::move(axis)) {}
  const Axis& axis() const { return axis_; }

 protected:
  Tensor norms(const Tensor& w) const;

 private:
  Axis axis_;
};

// w * clip(norm, 0, max_value) / (eps + norm): norms above max_value shrink to it.
// ValueError for a negative or non-finite max_value.
class MaxNorm : public NormConstraint {
 public:
  explicit MaxNorm(double max_value = 2.0, Axis axis = 0);
  Tensor operator()(const Tensor& w) const override;
  std::string class_name() const override { return "MaxNorm"; }
  json get_config() const override { return {{"max_value", max_value_}, {"axis", axis().to_json()}}; }
  double max_value() const { return max_value_; }

 private:
  double max_value_;
};

// max(w, 0) (Keras 3's NonNeg).
class NonNeg : public Constraint {
 public:
  Tensor operator()(const Tensor& w) const override;
  std::string class_name() const override { return "NonNeg"; }
};

// w / (eps + norm).
class UnitNorm : public NormConstraint {
 public:
  explicit UnitNorm(Axis axis = 0) : NormConstraint(std::move(axis)) {}
  Tensor operator()(const Tensor& w) const override;
  std::string class_name() const override { return "UnitNorm"; }
  json get_config() const override { return {{"axis", axis().to_json()}}; }
};

// w * desired / (eps + norm), desired = rate * clip(norm, min_value, max_value) + (1 - rate) * norm.
// ValueError for non-finite values or min_value > max_value.
class MinMaxNorm : public NormConstraint {
 public:
  explicit MinMaxNorm(double min_value = 0.0, double max_value = 1.0, double rate = 1.0, Axis axis = 0);
  Tensor operator()(const Tensor& w) const override;
  std::string class_name() const override { return "MinMaxNorm"; }
  json get_config() const override {
    return {{"min_value", min_value_}, {"max_value", max_value_}, {"rate", rate_}, {"axis", axis().to_json()}};
  }
  double min_value() const { return min_value_; }
  double max_value() const { return max_value_; }
  double rate() const { return rate_; }

 private:
  double min_value_, max_value_, rate_;
};

using ConstraintFactory = std::function<ConstraintPtr(const json& config)>;
// Registers a class (custom constraints too) under `name`; later registrations replace.
void register_constraint(const std::string& name, ConstraintFactory factory);
// By Keras name: class names ("MaxNorm"), snake aliases ("max_norm", "non_neg", "unit_norm",
// "min_max_norm") and Keras 2's legacy "maxnorm", "nonneg", "unitnorm". ValueError listing the
// known names otherwise.
ConstraintPtr get(const std::string& name);
// From a bare string, a Keras 2 {"class_name","config"} or Keras 3 object; null -> nullptr.
// ValueError for unknown classes (listing the known ones), malformed objects or bad values.
ConstraintPtr from_config(const json& j);
// Keras 3 object {"module": "keras.constraints", ...}; null for nullptr.
json serialize(const ConstraintPtr& constraint);
std::vector<std::string> known_names();

}  // namespace keras::constraints

namespace keras {

// What a constraint option of a layer accepts: a Keras name, a constraint object, or nothing.
//   DenseOptions{.units = 4, .kernel_constraint = "non_neg"}
//   DenseOptions{.units = 4, .kernel_constraint = std::make_shared<constraints::MaxNorm>(3.0)}
class ConstraintArg {
 public:
  ConstraintArg() = default;
  ConstraintArg(std::nullptr_t) {}
  ConstraintArg(const char* name) : ptr_(constraints::get(name)) {}
  ConstraintArg(const std::string& name) : ptr_(constraints::get(name)) {}
  template <class T>
    requires std::derived_from<T, Constraint>
  ConstraintArg(std::shared_ptr<T> constraint) : ptr_(std::move(constraint)) {}
  const ConstraintPtr& ptr() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  ConstraintPtr ptr_;
};

}  // namespace keras
