#include "losses/regression.h"

#include "backend/ops.h"

namespace keras::losses {

namespace {

// y_true in y_pred's compute dtype, ranks aligned as Keras does, shapes checked.
std::pair<Tensor, Tensor> prepare(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  DType dt = compute_dtype(y_pred);
  Tensor p = to_compute(y_pred, dt, y_pred.device());
  Tensor t = to_compute(y_true, dt, y_pred.device());
  std::tie(t, p) = squeeze_or_expand_to_same_rank(t, p);
  check_same_shape(where, t, p);
  return {t, p};
}

Tensor mean_last_axis(const Tensor& x) {
  if (x.rank() == 0) return x;
  return ops::mean(x, {-1});
}

}  // namespace

Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  auto [t, p] = prepare(y_true, y_pred, where);
  return mean_last_axis(ops::square(ops::subtract(p, t)));
}

Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  auto [t, p] = prepare(y_true, y_pred, where);
  return mean_last_axis(ops::abs(ops::subtract(p, t)));
}

Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta, const std::string& where) {
  auto [t, p] = prepare(y_true, y_pred, where);
  Tensor error = ops::subtract(p, t);
  Tensor abs_error = ops::abs(error);
  Tensor small = ops::less_equal(abs_error, Tensor::scalar(delta, abs_error.dtype(), abs_error.device()));
  Tensor quadratic = ops::multiply(ops::square(error), 0.5);
  Tensor linear = ops::add(ops::multiply(abs_error, delta), -0.5 * delta * delta);
  return mean_last_axis(ops::where(small, quadratic, linear));
}

// ---- MeanSquaredError ----

MeanSquaredErrorImpl::MeanSquaredErrorImpl(const MeanSquaredErrorOptions& o) : Loss(o.name, o.reduction) {}
Tensor MeanSquaredErrorImpl::call(const Tensor& y_true, const Tensor& y_pred) const {
  return mean_squared_error(y_true, y_pred, where());
}
std::shared_ptr<MeanSquaredErrorImpl> MeanSquaredErrorImpl::from_config(const json& config) {
  MeanSquaredErrorOptions o;
  read_base_config(config, o.reduction, o.name);
  return std::make_shared<MeanSquaredErrorImpl>(o);
}
std::shared_ptr<MeanSquaredErrorImpl> MeanSquaredError(const MeanSquaredErrorOptions& options) {
  return std::make_shared<MeanSquaredErrorImpl>(options);
}

// ---- MeanAbsoluteError ----

MeanAbsoluteErrorImpl::MeanAbsoluteErrorImpl(const MeanAbsoluteErrorOptions& o) : Loss(o.name, o.reduction) {}
Tensor MeanAbsoluteErrorImpl::call(const Tensor& y_true, const Tensor& y_pred) const {
  return mean_absolute_error(y_true, y_pred, where());
}
std::shared_ptr<MeanAbsoluteErrorImpl> MeanAbsoluteErrorImpl::from_config(const json& config) {
  MeanAbsoluteErrorOptions o;
  read_base_config(config, o.reduction, o.name);
  return std::make_shared<MeanAbsoluteErrorImpl>(o);
}
std::shared_ptr<MeanAbsoluteErrorImpl> MeanAbsoluteError(const MeanAbsoluteErrorOptions& options) {
  return std::make_shared<MeanAbsoluteErrorImpl>(options);
}

// ---- Huber ----

HuberImpl::HuberImpl(const HuberOptions& o) : Loss(o.name, o.reduction), options_(o) {
  options_.reduction = reduction();
  if (!(o.delta > 0))
    fail<ValueError>("Loss '" + o.name + "' (Huber)", "delta > 0", std::to_string(o.delta));
}
Tensor HuberImpl::call(const Tensor& y_true, const Tensor& y_pred) const {
  return huber(y_true, y_pred, options_.delta, where());
}
json HuberImpl::get_config() const {
  json c = Loss::get_config();
  c["delta"] = options_.delta;
  return c;
}
std::shared_ptr<HuberImpl> HuberImpl::from_config(const json& config) {
  HuberOptions o;
  read_base_config(config, o.reduction, o.name);
  if (config.contains("delta") && config["delta"].is_number()) o.delta = config["delta"].get<double>();
  return std::make_shared<HuberImpl>(o);
}
std::shared_ptr<HuberImpl> Huber(const HuberOptions& options) { return std::make_shared<HuberImpl>(options); }

namespace {
const bool registered = [] {
  register_loss("MeanSquaredError", [](const json& c) -> LossPtr { return MeanSquaredErrorImpl::from_config(c); },
                {"mse", "MSE", "mean_squared_error"});
  register_loss("MeanAbsoluteError", [](const json& c) -> LossPtr { return MeanAbsoluteErrorImpl::from_config(c); },
                {"mae", "MAE", "mean_absolute_error"});
  register_loss("Huber", [](const json& c) -> LossPtr { return HuberImpl::from_config(c); }, {"huber", "huber_loss"});
  return true;
}();
}  // namespace

}  // namespace keras::losses
