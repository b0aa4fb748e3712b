#include "metrics/fbeta.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "metrics/host_array.h"
#include "metrics/metric_config.h"

namespace keras::metrics {

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

double f32(double v) { return cast_like(v, DType::float32); }

}  // namespace

FBetaScoreImpl::FBetaScoreImpl(const FBetaScoreOptions& o) : FBetaScoreImpl(o, "FBetaScore") {}

FBetaScoreImpl::FBetaScoreImpl(const FBetaScoreOptions& o, const std::string& cls)
    : Metric(o.name, o.dtype), options_(o) {
  const std::string w = "Metric '" + name() + "' (" + cls + ")";
  if (o.average && *o.average != "micro" && *o.average != "macro" && *o.average != "weighted")
    fail<ValueError>(w, "average of none, \"micro\", \"macro\" or \"weighted\"", "\"" + *o.average + "\"");
  if (!(o.beta > 0.0)) fail<ValueError>(w, "beta > 0", std::to_string(o.beta));
  if (o.threshold && !(*o.threshold > 0.0 && *o.threshold <= 1.0))
    fail<ValueError>(w, "threshold in (0, 1]", std::to_string(*o.threshold));
}

void FBetaScoreImpl::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (!y_true.defined() || !y_pred.defined()) fail<ValueError>(where(), "defined y_true and y_pred", "an undefined tensor");
  if (y_true.rank() != 2 || y_pred.rank() != 2 || y_true.shape() != y_pred.shape())
    fail<ShapeError>(where(), "y_true and y_pred of one shape (batch_size, num_classes)",
                     "y_true " + shape_str(y_true.shape()) + " and y_pred " + shape_str(y_pred.shape()),
                     "Use one-hot labels; a (batch, 1) binary output needs a threshold.");
  const int64_t batch = y_pred.dim(0), classes = y_pred.dim(1);
  if (classes_ >= 0 && classes != classes_)
    fail<ShapeError>(where(), std::to_string(classes_) + " classes, as in earlier batches",
                     "y_pred " + shape_str(y_pred.shape()));
  std::vector<double> weights(static_cast<size_t>(batch), 1.0);
  if (sample_weight.defined()) {
    HostArray w = to_host(sample_weight);
    const bool per_sample = (w.rank() == 1 && w.shape[0] == batch) || (w.rank() == 2 && w.shape[0] == batch && w.shape[1] == 1);
    if (w.rank() == 0) std::fill(weights.begin(), weights.end(), f32(w.data[0]));
    else if (per_sample) std::transform(w.data.begin(), w.data.end(), weights.begin(), f32);
    else
      fail<ShapeError>(where(), "sample_weight of shape (" + std::to_string(batch) + ",) or (" + std::to_string(batch) + ", 1)",
                       "sample_weight of shape " + shape_str(sample_weight.shape()));
  }
  const bool micro = options_.average == "micro";
  if (!micro && !tp_.empty() && static_cast<int64_t>(tp_.size()) != classes)  // state restored by set_state
    fail<ShapeError>(where(), std::to_string(tp_.size()) + " classes, as in the restored state",
                     "y_pred " + shape_str(y_pred.shape()));
  classes_ = classes;
  if (tp_.empty())
    for (auto* v : {&tp_, &fp_, &fn_, &support_}) v->assign(micro ? 1 : static_cast<size_t>(classes), 0.0);
  HostArray t = to_host(y_true), p = to_host(y_pred);
  for (int64_t i = 0; i < batch; ++i) {
    const double* prow = p.data.data() + i * classes;
    const double* trow = t.data.data() + i * classes;
    double row_max = -INFINITY;
    for (int64_t j = 0; j < classes; ++j) row_max = std::max(row_max, f32(prow[j]));
    const double w = weights[static_cast<size_t>(i)];
    for (int64_t j = 0; j < classes; ++j) {
      const double pv = f32(prow[j]);
      const double pred = options_.threshold ? (pv > f32(*options_.threshold) ? 1.0 : 0.0)
                                             : (pv >= row_max && std::fabs(pv) > 1e-9 ? 1.0 : 0.0);
      const double y = f32(trow[j]);
      const size_t k = micro ? 0 : static_cast<size_t>(j);
      tp_[k] += w * pred * y;
      fp_[k] += w * pred * (1 - y);
      fn_[k] += w * (1 - pred) * y;
      support_[k] += w * y;
    }
  }
}

std::vector<double> FBetaScoreImpl::per_class() const {
  const double b2 = options_.beta * options_.beta;
  std::vector<double> out(tp_.size());
  for (size_t k = 0; k < tp_.size(); ++k) {
    const double precision = tp_[k] / (tp_[k] + fp_[k] + kEpsilon);
    const double recall = tp_[k] / (tp_[k] + fn_[k] + kEpsilon);
    out[k] = (1 + b2) * precision * recall / (b2 * precision + recall + kEpsilon);
  }
  return out;
}

double FBetaScoreImpl::result() const {
  const std::vector<double> f = per_class();
  if (f.empty()) return 0.0;
  if (options_.average == "weighted") {
    const double total = std::accumulate(support_.begin(), support_.end(), 0.0) + kEpsilon;
    double s = 0;
    for (size_t k = 0; k < f.size(); ++k) s += f[k] * support_[k] / total;
    return s;
  }
  return std::accumulate(f.begin(), f.end(), 0.0) / static_cast<double>(f.size());
}

Tensor FBetaScoreImpl::result_tensor() const {
  if (options_.average) return Metric::result_tensor();
  const std::vector<double> f = per_class();
  return make_values(f, {static_cast<int64_t>(f.size())});
}

void FBetaScoreImpl::reset_state() {
  for (auto* v : {&tp_, &fp_, &fn_, &support_}) std::fill(v->begin(), v->end(), 0.0);
}

json FBetaScoreImpl::get_config() const {
  json c = Metric::get_config();
  c["average"] = config::optional_json(options_.average);
  c["beta"] = options_.beta;
  c["threshold"] = config::optional_json(options_.threshold);
  return c;
}

std::vector<double> FBetaScoreImpl::state() const {
  std::vector<double> s;
  for (const auto* v : {&tp_, &fp_, &fn_, &support_}) s.insert(s.end(), v->begin(), v->end());
  return s;
}

void FBetaScoreImpl::set_state(const std::vector<double>& values) {
  const bool micro = options_.average == "micro";
  size_t slots = tp_.size();
  if (tp_.empty()) {  // not built yet: the state fixes the number of classes
    if (values.size() % 4 != 0 || values.empty() || (micro && values.size() != 4))
      fail<ValueError>(where(), "4 equal groups of state values (tp, fp, fn, support)", std::to_string(values.size()));
    slots = values.size() / 4;
  }
  if (values.size() != 4 * slots)
    fail<ValueError>(where(), std::to_string(4 * slots) + " state values (tp, fp, fn, support)", std::to_string(values.size()));
  auto at = values.begin();
  for (auto* v : {&tp_, &fp_, &fn_, &support_}) {
    v->assign(at, at + static_cast<std::ptrdiff_t>(slots));
    at += static_cast<std::ptrdiff_t>(slots);
  }
}

std::shared_ptr<FBetaScoreImpl> FBetaScore(const FBetaScoreOptions& o) { return std::make_shared<FBetaScoreImpl>(o); }

F1ScoreImpl::F1ScoreImpl(const F1ScoreOptions& o)
    : FBetaScoreImpl({.average = o.average, .beta = 1.0, .threshold = o.threshold, .name = o.name, .dtype = o.dtype},
                     "F1Score") {}

json F1ScoreImpl::get_config() const {
  json c = FBetaScoreImpl::get_config();
  c.erase("beta");
  return c;
}

std::shared_ptr<F1ScoreImpl> F1Score(const F1ScoreOptions& o) { return std::make_shared<F1ScoreImpl>(o); }

namespace {
template <class Options>
Options read_fscore(const json& c) {
  Options o;
  read_base_config(c, o.name, o.dtype);
  config::read(c, "average", o.average);
  config::read(c, "threshold", o.threshold);
  if constexpr (requires { o.beta; }) config::read(c, "beta", o.beta);
  return o;
}

const bool registered = [] {
  register_metric("FBetaScore", [](const json& c) -> MetricPtr { return FBetaScore(read_fscore<FBetaScoreOptions>(c)); },
                  {"f_beta_score", "fbeta_score"});
  register_metric("F1Score", [](const json& c) -> MetricPtr { return F1Score(read_fscore<F1ScoreOptions>(c)); },
                  {"f1_score"});
  return true;
}();
}  // namespace

}  // namespace keras::metrics
