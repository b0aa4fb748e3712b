// Initializer, Regularizer and Constraint interfaces (Keras keras.initializers /
// keras.regularizers / keras.constraints). Concrete classes live in initializers.h /
// regularizers.h / constraints.h; all are looked up by Keras name.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"

namespace keras {

using json = nlohmann::json;

class Initializer {
 public:
  virtual ~Initializer() = default;
  // A new tensor of `shape`. A seeded initializer returns the same values on every call (as
  // Keras 3); an unseeded one draws from the global generator (keras::set_random_seed).
  virtual Tensor operator()(const Shape& shape, DType dtype = DType::float32) const = 0;
  virtual std::string class_name() const = 0;
  virtual json get_config() const { return json::object(); }
};
using InitializerPtr = std::shared_ptr<Initializer>;

class Regularizer {
 public:
  virtual ~Regularizer() = default;
  // The penalty for weight `w`: a scalar tensor, differentiable (recorded on the tape).
  virtual Tensor operator()(const Tensor& w) const = 0;
  virtual std::string class_name() const = 0;
  virtual json get_config() const { return json::object(); }
};
using RegularizerPtr = std::shared_ptr<Regularizer>;

// As Keras's base Constraint: the identity, class name "Constraint". Subclasses override both.
class Constraint {
 public:
  virtual ~Constraint() = default;
  // The projection of weight `w` (same shape and dtype), applied after each optimizer update.
  virtual Tensor operator()(const Tensor& w) const { return w; }
  virtual std::string class_name() const { return "Constraint"; }
  virtual json get_config() const { return json::object(); }
};
using ConstraintPtr = std::shared_ptr<Constraint>;

}  // namespace keras
