#include "metrics/regression.h"

#include <cmath>

namespace keras::metrics {

void RootMeanSquaredErrorImpl::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (!y_true.defined() || !y_pred.defined()) fail<ValueError>(where(), "defined y_true and y_pred", "an undefined tensor");
  HostArray t = to_host(y_true), p = to_host(y_pred);
  squeeze_or_expand(t, p);
  if (t.shape != p.shape)
    fail<ShapeError>(where(), "y_true and y_pred of one shape",
                     "y_true " + shape_str(y_true.shape()) + " and y_pred " + shape_str(y_pred.shape()));
  for (size_t i = 0; i < p.data.size(); ++i) {
    const double d = cast_like(p.data[i], DType::float32) - cast_like(t.data[i], DType::float32);
    p.data[i] = d * d;
  }
  accumulate(std::move(p), sample_weight);
}

double RootMeanSquaredErrorImpl::result() const { return std::sqrt(MeanImpl::result()); }

std::shared_ptr<RootMeanSquaredErrorImpl> RootMeanSquaredError(const RootMeanSquaredErrorOptions& o) {
  return std::make_shared<RootMeanSquaredErrorImpl>(o);
}

namespace {
const bool registered = [] {
  register_metric("RootMeanSquaredError",
                  [](const json& c) -> MetricPtr {
                    RootMeanSquaredErrorOptions o;
                    read_base_config(c, o.name, o.dtype);
                    return RootMeanSquaredError(o);
                  },
                  {"root_mean_squared_error"});
  return true;
}();
}  // namespace

}  // namespace keras::metrics
