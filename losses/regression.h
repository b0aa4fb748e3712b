// Regression losses: MeanSquaredError, MeanAbsoluteError, Huber (keras.losses), each as a
// class (…Impl) made through a factory named like the Keras class:
//   auto loss = keras::losses::Huber({.delta = 2.0});
//   Tensor value = (*loss)(y_true, y_pred);
// The options struct is the config (DESIGN decision 6).
#pragma once
#include "losses/loss.h"

namespace keras::losses {

// ---- functional forms (unreduced; Keras's squeeze/expand of a trailing 1 first) ----
// Each averages over the last axis: (batch, d) -> (batch,); rank-1 inputs give a scalar, as
// in Keras. y_true is cast to y_pred's floating dtype. ShapeError (naming `where`) when the
// shapes differ.
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred, const std::string& where = "mean_squared_error");
Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred, const std::string& where = "mean_absolute_error");
// Quadratic for |y_pred - y_true| <= delta, linear beyond: delta*|e| - delta^2/2.
Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta = 1.0, const std::string& where = "huber");

struct MeanSquaredErrorOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name = "mean_squared_error";
};
class MeanSquaredErrorImpl : public Loss {
 public:
  explicit MeanSquaredErrorImpl(const MeanSquaredErrorOptions& options = {});
  std::string class_name() const override { return "MeanSquaredError"; }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  static std::shared_ptr<MeanSquaredErrorImpl> from_config(const json& config);
};
std::shared_ptr<MeanSquaredErrorImpl> MeanSquaredError(const MeanSquaredErrorOptions& options = {});

struct MeanAbsoluteErrorOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name = "mean_absolute_error";
};
class MeanAbsoluteErrorImpl : public Loss {
 public:
  explicit MeanAbsoluteErrorImpl(const MeanAbsoluteErrorOptions& options = {});
  std::string class_name() const override { return "MeanAbsoluteError"; }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  static std::shared_ptr<MeanAbsoluteErrorImpl> from_config(const json& config);
};
std::shared_ptr<MeanAbsoluteErrorImpl> MeanAbsoluteError(const MeanAbsoluteErrorOptions& options = {});

struct HuberOptions {
  double delta = 1.0;  // > 0 (ValueError otherwise)
  std::string reduction = "sum_over_batch_size";
  std::string name = "huber_loss";
};
class HuberImpl : public Loss {
 public:
  explicit HuberImpl(const HuberOptions& options = {});
  std::string class_name() const override { return "Huber"; }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  json get_config() const override;  // + delta
  static std::shared_ptr<HuberImpl> from_config(const json& config);
  const HuberOptions& options() const { return options_; }

 private:
  HuberOptions options_;
};
std::shared_ptr<HuberImpl> Huber(const HuberOptions& options = {});

}  // namespace keras::losses
