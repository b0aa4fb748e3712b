// Regression metrics (keras.metrics): MeanSquaredError and MeanAbsoluteError live in
// metrics/mean.h (MeanMetricWrapper over losses::mean_squared_error / mean_absolute_error);
// RootMeanSquaredError is here.
#pragma once
#include "metrics/mean.h"

namespace keras::metrics {

struct RootMeanSquaredErrorOptions {
  std::string name = "root_mean_squared_error";
  std::string dtype = "float32";
};

// sqrt of the weighted Mean (metrics/mean.h rules) of (y_pred - y_true)^2 after the squeeze/
// expand of a trailing 1: elements are averaged per sample, samples weighted by sample_weight.
// Note it is the root of the accumulated mean, not the mean of per-batch roots. direction "min".
class RootMeanSquaredErrorImpl : public MeanImpl {
 public:
  explicit RootMeanSquaredErrorImpl(const RootMeanSquaredErrorOptions& o = {}) : MeanImpl({.name = o.name, .dtype = o.dtype}) {}
  std::string class_name() const override { return "RootMeanSquaredError"; }
  std::string direction() const override { return "min"; }
  // y_true and y_pred of one shape after the squeeze/expand (ShapeError naming the metric otherwise).
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  double result() const override;
};
std::shared_ptr<RootMeanSquaredErrorImpl> RootMeanSquaredError(const RootMeanSquaredErrorOptions& options = {});

}  // namespace keras::metrics
