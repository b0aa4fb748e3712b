// Keras weight regularizers (keras.regularizers): L1, L2, L1L2. A regularizer maps a weight to a
// scalar penalty built from keras::ops, so it is differentiable and recorded on the tape.
#pragma once
#include <concepts>
#include <functional>
#include <string>
#include <vector>

#include "layers/initializer.h"

namespace keras::regularizers {

// penalty = l1 * sum(|w|) + l2 * sum(w^2); either term is skipped when its factor is 0.
// ValueError for a negative or non-finite factor.
class L1L2 : public Regularizer {
 public:
  explicit L1L2(double l1 = 0.0, double l2 = 0.0);
  Tensor operator()(const Tensor& w) const override;
  std::string class_name() const override { return "L1L2"; }
  json get_config() const override { return {{"l1", l1_}, {"l2", l2_}}; }
  double l1() const { return l1_; }
  double l2() const { return l2_; }

 private:
  double l1_, l2_;
};

class L1 : public L1L2 {
 public:
  explicit L1(double l1 = 0.01) : L1L2(l1, 0.0) {}
  std::string class_name() const override { return "L1"; }
  json get_config() const override { return {{"l1", l1()}}; }
};

class L2 : public L1L2 {
 public:
  explicit L2(double l2 = 0.01) : L1L2(0.0, l2) {}
  std::string class_name() const override { return "L2"; }
  json get_config() const override { return {{"l2", l2()}}; }
};

using RegularizerFactory = std::function<RegularizerPtr(const json& config)>;
// Registers a class (custom regularizers too) under `name`; later registrations replace.
void register_regularizer(const std::string& name, RegularizerFactory factory);
// By Keras name ("l1", "l2", "l1_l2", "L1", "L2", "L1L2"); ValueError listing known names.
RegularizerPtr get(const std::string& name);
// From a bare string, a Keras 2 {"class_name","config"} or Keras 3 object; null -> nullptr.
RegularizerPtr from_config(const json& j);
// Keras 3 object {"module": "keras.regularizers", ...}; null for nullptr.
json serialize(const RegularizerPtr& reg);
std::vector<std::string> known_names();

}  // namespace keras::regularizers

namespace keras {

// What a regularizer option of a layer accepts: a Keras name, a regularizer object, or nothing.
class RegularizerArg {
 public:
  RegularizerArg() = default;
  RegularizerArg(std::nullptr_t) {}
  RegularizerArg(const char* name) : ptr_(regularizers::get(name)) {}
  RegularizerArg(const std::string& name) : ptr_(regularizers::get(name)) {}
  template <class T>
    requires std::derived_from<T, Regularizer>
  RegularizerArg(std::shared_ptr<T> reg) : ptr_(std::move(reg)) {}
  const RegularizerPtr& ptr() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  RegularizerPtr ptr_;
};

}  // namespace keras
