#include "metrics/mean.h"

#include "backend/autodiff.h"
#include "losses/loss.h"
#include "losses/regression.h"

namespace keras::metrics {

MeanImpl::MeanImpl(const MeanOptions& options) : Metric(options.name, options.dtype) {}

void MeanImpl::update_values(const Tensor& values, const Tensor& sample_weight) {
  if (!values.defined()) fail<ValueError>(where(), "defined values", "an undefined tensor");
  accumulate(to_host(values), sample_weight);
}

void MeanImpl::update_state(const Tensor& values, const Tensor& sample_weight, const Tensor& unused) {
  if (unused.defined())
    fail<TypeError>(where(), "update_state(values, sample_weight)", "a third argument",
                    "Mean averages values; wrap a function of (y_true, y_pred) in MeanMetricWrapper.");
  update_values(values, sample_weight);
}

void MeanImpl::accumulate(HostArray values, const Tensor& sample_weight) {
  if (!sample_weight.defined()) {
    if (values.rank() > 1) values = mean_trailing(values, 1);
    for (double v : values.data) total_ += v;
    count_ += values.rank() >= 1 ? static_cast<double>(values.shape[0]) : 1.0;
    return;
  }
  HostArray weights = to_host(sample_weight);
  const Shape given_values = values.shape, given_weights = weights.shape;
  squeeze_or_expand(values, weights);
  if (values.rank() > weights.rank()) values = mean_trailing(values, weights.rank());
  HostArray broadcast;
  if (!broadcast_to(weights, values.shape, broadcast))
    fail<ShapeError>(where(), "sample_weight that broadcasts to values of shape " + shape_str(given_values),
                     "sample_weight of shape " + shape_str(given_weights),
                     "Pass one weight per sample, shape (batch,) or (batch, 1).");
  for (size_t i = 0; i < values.data.size(); ++i) values.data[i] *= broadcast.data[i];
  if (broadcast.rank() > 1) broadcast = mean_trailing(broadcast, 1);
  if (values.rank() > 1) values = mean_trailing(values, 1);
  for (double v : values.data) total_ += v;
  for (double w : broadcast.data) count_ += w;
}

double MeanImpl::result() const { return count_ == 0 ? 0.0 : total_ / count_; }

void MeanImpl::reset_state() { total_ = count_ = 0; }

void MeanImpl::set_state(const std::vector<double>& values) {
  if (values.size() != 2) fail<ValueError>(where(), "2 state values (total, count)", std::to_string(values.size()));
  total_ = values[0];
  count_ = values[1];
}

std::shared_ptr<MeanImpl> MeanImpl::from_config(const json& config) {
  MeanOptions o;
  read_base_config(config, o.name, o.dtype);
  return std::make_shared<MeanImpl>(o);
}

std::shared_ptr<MeanImpl> Mean(const MeanOptions& options) { return std::make_shared<MeanImpl>(options); }

MeanMetricWrapper::MeanMetricWrapper(MetricFn fn, std::string name, std::string dtype, std::string direction,
                                     std::string class_name)
    : MeanImpl({.name = std::move(name), .dtype = std::move(dtype)}),
      fn_(std::move(fn)),
      direction_(std::move(direction)),
      class_name_(std::move(class_name)) {}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  Tensor values;
  {
    NoGradGuard no_grad;
    values = fn_(y_true, y_pred);
  }
  accumulate(to_host(values), losses::apply_mask(sample_weight, y_pred.keras_mask(), DType::float32, "sum"));
}

namespace {
std::shared_ptr<MeanMetricWrapper> error_metric(const MeanOptions& o, bool squared) {
  MetricFn fn = squared ? MetricFn([](const Tensor& t, const Tensor& p) { return losses::mean_squared_error(t, p); })
                        : MetricFn([](const Tensor& t, const Tensor& p) { return losses::mean_absolute_error(t, p); });
  return std::make_shared<MeanMetricWrapper>(std::move(fn), o.name, o.dtype, "min",
                                             squared ? "MeanSquaredError" : "MeanAbsoluteError");
}
}  // namespace

std::shared_ptr<MeanMetricWrapper> MeanSquaredError(const MeanOptions& options) { return error_metric(options, true); }
std::shared_ptr<MeanMetricWrapper> MeanAbsoluteError(const MeanOptions& options) { return error_metric(options, false); }

namespace {
const bool registered = [] {
  register_metric("Mean", [](const json& c) -> MetricPtr { return MeanImpl::from_config(c); }, {"mean"});
  register_metric("MeanSquaredError",
                  [](const json& c) -> MetricPtr {
                    MeanOptions o{.name = "mean_squared_error"};
                    read_base_config(c, o.name, o.dtype);
                    return MeanSquaredError(o);
                  },
                  {"mse", "MSE", "mean_squared_error"});
  register_metric("MeanAbsoluteError",
                  [](const json& c) -> MetricPtr {
                    MeanOptions o{.name = "mean_absolute_error"};
                    read_base_config(c, o.name, o.dtype);
                    return MeanAbsoluteError(o);
                  },
                  {"mae", "MAE", "mean_absolute_error"});
  return true;
}();
}  // namespace

}  // namespace keras::metrics
