#include "metrics/auc.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "metrics/metric_config.h"

namespace keras::metrics {

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}
std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

double safe_div(double a, double b) { return b == 0.0 ? 0.0 : a / b; }

}  // namespace

AUCImpl::AUCImpl(const AUCOptions& o) : Metric(o.name, o.dtype), options_(o) {
  const std::string w = "Metric '" + name() + "' (AUC)";
  curve_ = upper(o.curve);
  if (curve_ != "ROC" && curve_ != "PR") fail<ValueError>(w, "curve \"ROC\" or \"PR\"", "\"" + o.curve + "\"");
  summation_ = lower(o.summation_method);
  if (summation_ != "interpolation" && summation_ != "minoring" && summation_ != "majoring")
    fail<ValueError>(w, "summation_method \"interpolation\", \"minoring\" or \"majoring\"", "\"" + o.summation_method + "\"");
  std::vector<double> inner;
  if (!o.thresholds.empty()) {
    inner = o.thresholds;
    for (double t : inner)
      if (!(t >= 0.0 && t <= 1.0)) fail<ValueError>(w, "threshold values in [0, 1]", std::to_string(t));
    std::sort(inner.begin(), inner.end());
    options_.thresholds = inner;
    evenly_ = false;
  } else {
    if (o.num_thresholds <= 1)
      fail<ValueError>(w, "num_thresholds > 1", std::to_string(o.num_thresholds));
    for (int i = 0; i < o.num_thresholds - 2; ++i) inner.push_back((i + 1) * 1.0 / (o.num_thresholds - 1));
  }
  thresholds_.push_back(cast_like(0.0 - kEpsilon, DType::float32));
  for (double t : inner) thresholds_.push_back(cast_like(t, DType::float32));
  thresholds_.push_back(cast_like(1.0 + kEpsilon, DType::float32));
  options_.num_thresholds = static_cast<int>(thresholds_.size());
  for (double lw : o.label_weights)
    if (!(lw >= 0.0)) fail<ValueError>(w, "label_weights >= 0", std::to_string(lw));
  if (o.num_labels && *o.num_labels < 1) fail<ValueError>(w, "num_labels >= 1", std::to_string(*o.num_labels));
  if (!o.multi_label) build(1);
  else if (o.num_labels) build(*o.num_labels);
}

void AUCImpl::build(int labels) {
  counts_.assign(static_cast<size_t>(labels), ConfusionCounts{});
  for (auto& c : counts_) c.resize(thresholds_.size());
}

void AUCImpl::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  ConfusionInputs in = prepare_confusion_inputs(where(), y_true, y_pred, sample_weight);
  if (options_.from_logits)
    for (double& p : in.pred.data) p = cast_like(1.0 / (1.0 + std::exp(-p)), DType::float32);
  const bool per_label = options_.multi_label || !options_.label_weights.empty();
  int64_t labels = 1;
  if (per_label) {
    if (in.pred.rank() != 2)
      fail<ShapeError>(where(), "y_true and y_pred of shape (batch, num_labels) with multi_label or label_weights",
                       "y_pred " + shape_str(y_pred.shape()));
    labels = in.pred.shape[1];
    if (!options_.label_weights.empty() && static_cast<int64_t>(options_.label_weights.size()) != labels)
      fail<ShapeError>(where(), std::to_string(options_.label_weights.size()) + " labels (one per label weight)",
                       "y_pred " + shape_str(y_pred.shape()));
  }
  if (options_.multi_label) {
    if (counts_.empty()) build(static_cast<int>(labels));
    if (static_cast<int64_t>(counts_.size()) != labels)
      fail<ShapeError>(where(), std::to_string(counts_.size()) + " labels, as in earlier batches",
                       "y_pred " + shape_str(y_pred.shape()));
    for (int64_t j = 0; j < labels; ++j)
      accumulate_confusion(counts_[static_cast<size_t>(j)], in, thresholds_, evenly_, j, labels);
    return;
  }
  if (!options_.label_weights.empty())
    for (size_t i = 0; i < in.weight.data.size(); ++i)
      in.weight.data[i] *= options_.label_weights[i % static_cast<size_t>(labels)];
  accumulate_confusion(counts_[0], in, thresholds_, evenly_);
}

double AUCImpl::interpolate_pr_auc(const ConfusionCounts& c) const {
  const size_t n = thresholds_.size();
  double total = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    const double dtp = c.tp[i] - c.tp[i + 1];
    const double p0 = c.tp[i] + c.fp[i], p1 = c.tp[i + 1] + c.fp[i + 1];
    const double dp = p0 - p1;
    const double prec_slope = safe_div(dtp, std::max(dp, 0.0));
    const double intercept = c.tp[i + 1] - prec_slope * p1;
    const double safe_p_ratio = (p0 > 0 && p1 > 0) ? safe_div(p0, std::max(p1, 0.0)) : 1.0;
    total += safe_div(prec_slope * (dtp + intercept * std::log(safe_p_ratio)), std::max(c.tp[i + 1] + c.fn[i + 1], 0.0));
  }
  return total;
}

double AUCImpl::curve_area(const ConfusionCounts& c) const {
  if (curve_ == "PR" && summation_ == "interpolation") return interpolate_pr_auc(c);
  const std::vector<double> recall = divide_no_nan(c.tp, c.fn);
  const std::vector<double> x = curve_ == "ROC" ? divide_no_nan(c.fp, c.tn) : recall;
  const std::vector<double> y = curve_ == "ROC" ? recall : divide_no_nan(c.tp, c.fp);
  double total = 0;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    double height = summation_ == "interpolation" ? (y[i] + y[i + 1]) / 2
                    : summation_ == "minoring"    ? std::min(y[i], y[i + 1])
                                                  : std::max(y[i], y[i + 1]);
    total += (x[i] - x[i + 1]) * height;
  }
  return total;
}

double AUCImpl::result() const {
  if (counts_.empty()) return 0.0;
  if (!options_.multi_label) return curve_area(counts_[0]);
  double sum = 0, weights = 0;
  for (size_t j = 0; j < counts_.size(); ++j) {
    const double w = options_.label_weights.empty() ? 1.0 : options_.label_weights[j];
    sum += curve_area(counts_[j]) * w;
    weights += w;
  }
  return safe_div(sum, weights);
}

void AUCImpl::reset_state() {
  for (auto& c : counts_) c.reset();
}

json AUCImpl::get_config() const {
  json c = Metric::get_config();
  c["num_thresholds"] = options_.num_thresholds;
  c["curve"] = curve_;
  c["summation_method"] = summation_;
  c["multi_label"] = options_.multi_label;
  std::optional<int> labels = options_.num_labels;
  if (options_.multi_label && !counts_.empty()) labels = static_cast<int>(counts_.size());
  c["num_labels"] = config::optional_json(labels);
  c["label_weights"] = options_.label_weights.empty() ? json(nullptr) : json(options_.label_weights);
  if (!evenly_) c["thresholds"] = options_.thresholds;
  c["from_logits"] = options_.from_logits;
  return c;
}

std::vector<double> AUCImpl::state() const {
  std::vector<double> s;
  for (auto member : {&ConfusionCounts::tp, &ConfusionCounts::fp, &ConfusionCounts::tn, &ConfusionCounts::fn})
    for (const auto& c : counts_) s.insert(s.end(), (c.*member).begin(), (c.*member).end());
  return s;
}

void AUCImpl::set_state(const std::vector<double>& values) {
  const size_t n = thresholds_.size();
  if (options_.multi_label && counts_.empty() && !values.empty() && values.size() % (4 * n) == 0)
    build(static_cast<int>(values.size() / (4 * n)));
  if (values.size() != 4 * n * counts_.size())
    fail<ValueError>(where(), std::to_string(4 * n * counts_.size()) + " state values (tp, fp, tn, fn)",
                     std::to_string(values.size()));
  auto at = values.begin();
  for (auto member : {&ConfusionCounts::tp, &ConfusionCounts::fp, &ConfusionCounts::tn, &ConfusionCounts::fn})
    for (auto& c : counts_) {
      (c.*member).assign(at, at + static_cast<std::ptrdiff_t>(n));
      at += static_cast<std::ptrdiff_t>(n);
    }
}

std::shared_ptr<AUCImpl> AUCImpl::from_config(const json& c) {
  AUCOptions o;
  read_base_config(c, o.name, o.dtype);
  config::read(c, "num_thresholds", o.num_thresholds);
  config::read(c, "curve", o.curve);
  config::read(c, "summation_method", o.summation_method);
  config::read(c, "thresholds", o.thresholds);
  config::read(c, "multi_label", o.multi_label);
  config::read(c, "num_labels", o.num_labels);
  config::read(c, "label_weights", o.label_weights);
  config::read(c, "from_logits", o.from_logits);
  return std::make_shared<AUCImpl>(o);
}

std::shared_ptr<AUCImpl> AUC(const AUCOptions& options) { return std::make_shared<AUCImpl>(options); }

namespace {
const bool registered = [] {
  register_metric("AUC", [](const json& c) -> MetricPtr { return AUCImpl::from_config(c); }, {"auc"});
  return true;
}();
}  // namespace

}  // namespace keras::metrics
