// Mean (keras.metrics.Mean), the weighted running mean every averaging metric builds on, and
// MeanMetricWrapper, which averages a per-sample function of (y_true, y_pred).
//
// Keras's weighting rules (reduce_to_samplewise_values), applied batch by batch:
//  - values and sample_weight get Keras's squeeze/expand of a trailing 1;
//  - values of higher rank than the weights are averaged over the extra trailing axes;
//  - the weights broadcast to the values, total += sum(values * weights),
//    count += sum(weights) (weights of rank > 1 first averaged over their non-batch axes);
//  - without weights, values are averaged per sample and count += batch size (1 for a scalar).
// result() = total / count, or 0 when count is 0.
#pragma once
#include "metrics/host_array.h"
#include "metrics/metric.h"

namespace keras::metrics {

struct MeanOptions {
  std::string name = "mean";
  std::string dtype = "float32";
};

class MeanImpl : public Metric {
 public:
  explicit MeanImpl(const MeanOptions& options = {});
  std::string class_name() const override { return "Mean"; }

  // Accumulates `values` (any shape) weighted by `sample_weight` (undefined = 1 per sample).
  // Throws ShapeError naming the metric when the weights do not broadcast to the values.
  void update_values(const Tensor& values, const Tensor& sample_weight = {});
  // Keras's Mean.update_state(values, sample_weight): on a plain Mean the first two arguments
  // are the values and their weights (the trainer's loss tracker calls
  // update_state(loss, Tensor::scalar(batch_size))). A third argument is a TypeError, since a
  // Mean has no (y_true, y_pred) form. Subclasses (wrappers, accuracies) override this with the
  // (y_true, y_pred, sample_weight) meaning of Metric.
  void update_state(const Tensor& values, const Tensor& sample_weight = {}, const Tensor& unused = {}) override;

  double result() const override;
  void reset_state() override;
  std::vector<double> state() const override { return {total_, count_}; }
  void set_state(const std::vector<double>& values) override;

  double total() const { return total_; }
  double count() const { return count_; }

  static std::shared_ptr<MeanImpl> from_config(const json& config);

 protected:
  // The weighting rules above, on host values already computed by a subclass.
  void accumulate(HostArray values, const Tensor& sample_weight);

 private:
  double total_ = 0;
  double count_ = 0;
};
std::shared_ptr<MeanImpl> Mean(const MeanOptions& options = {});

// A per-sample (or per-element) metric function: any keras::ops computation; it runs without
// the tape.
using MetricFn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;

// Averages fn(y_true, y_pred) with Mean's weighting. `class_name` and `direction` let simple
// function metrics (mse, mae) present themselves under their Keras class names.
class MeanMetricWrapper : public MeanImpl {
 public:
  MeanMetricWrapper(MetricFn fn, std::string name, std::string dtype = "float32", std::string direction = "unknown",
                    std::string class_name = "MeanMetricWrapper");
  std::string class_name() const override { return class_name_; }
  std::string direction() const override { return direction_; }
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;

 private:
  MetricFn fn_;
  std::string direction_;
  std::string class_name_;
};

// mean_squared_error / mean_absolute_error averaged per sample (keras.metrics.MeanSquaredError,
// MeanAbsoluteError; direction "min"). Registered as "mse"/"mae" and their long names.
std::shared_ptr<MeanMetricWrapper> MeanSquaredError(const MeanOptions& options = {.name = "mean_squared_error"});
std::shared_ptr<MeanMetricWrapper> MeanAbsoluteError(const MeanOptions& options = {.name = "mean_absolute_error"});

}  // namespace keras::metrics
