#include "metrics/confusion.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "metrics/metric_config.h"

namespace keras::metrics {

// ---- Thresholds ----

json Thresholds::to_json() const {
  if (none()) return nullptr;
  if (scalar && values.size() == 1) return values[0];
  return values;
}

Thresholds Thresholds::from_json(const json& j) {
  if (j.is_null()) return {};
  if (j.is_number()) return Thresholds(j.get<double>());
  std::vector<double> v;
  config::read(json{{"thresholds", j}}, "thresholds", v);
  return Thresholds(std::move(v));
}

// ---- counting ----

void ConfusionCounts::resize(size_t n) {
  tp.assign(n, 0.0);
  fp.assign(n, 0.0);
  tn.assign(n, 0.0);
  fn.assign(n, 0.0);
}

void ConfusionCounts::reset() { resize(size()); }

namespace {

double f32(double v) { return cast_like(v, DType::float32); }

// Keeps the k largest of each row of the last axis; the rest become NEG_INF. Ties go to the
// lower index, as top_k orders them.
void filter_top_k(HostArray& p, int k) {
  const int64_t classes = p.shape.back();
  if (classes == 0) return;
  const int64_t rows = p.size() / classes;
  const double neg_inf = f32(kNegInf);
  std::vector<int64_t> order(static_cast<size_t>(classes));
  for (int64_t r = 0; r < rows; ++r) {
    double* row = p.data.data() + r * classes;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [row](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (size_t j = static_cast<size_t>(std::min<int64_t>(k, classes)); j < order.size(); ++j) row[order[j]] = neg_inf;
  }
}

// Column `c` of the last axis, kept as a trailing extent of 1.
HostArray take_column(const HostArray& a, int64_t c) {
  const int64_t classes = a.shape.back();
  HostArray out{a.shape, {}};
  out.shape.back() = 1;
  const int64_t rows = classes == 0 ? 0 : a.size() / classes;
  out.data.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) out.data[static_cast<size_t>(r)] = a.data[static_cast<size_t>(r * classes + c)];
  return out;
}

}  // namespace

ConfusionInputs prepare_confusion_inputs(const std::string& where, const Tensor& y_true, const Tensor& y_pred,
                                         const Tensor& sample_weight, std::optional<int> top_k,
                                         std::optional<int> class_id) {
  if (!y_true.defined() || !y_pred.defined()) fail<ValueError>(where, "defined y_true and y_pred", "an undefined tensor");
  ConfusionInputs in{to_host(y_pred), to_host(y_true), {}};
  for (double& v : in.pred.data) v = f32(v);
  for (double& v : in.label.data) v = f32(v) != 0.0 ? 1.0 : 0.0;
  squeeze_or_expand(in.label, in.pred);
  if (in.label.shape != in.pred.shape)
    fail<ShapeError>(where, "y_true and y_pred of one shape",
                     "y_true " + shape_str(y_true.shape()) + " and y_pred " + shape_str(y_pred.shape()));
  if (sample_weight.defined()) {
    HostArray w = to_host(sample_weight);
    while (w.rank() > in.pred.rank() && w.shape.back() == 1) w.shape.pop_back();
    while (w.rank() < in.pred.rank()) w.shape.push_back(1);
    if (!broadcast_to(w, in.pred.shape, in.weight))
      fail<ShapeError>(where, "sample_weight that broadcasts to y_pred of shape " + shape_str(in.pred.shape),
                       "sample_weight of shape " + shape_str(sample_weight.shape()),
                       "Pass one weight per sample, shape (batch,) or (batch, 1).");
  } else {
    in.weight = HostArray{in.pred.shape, std::vector<double>(in.pred.data.size(), 1.0)};
  }
  if ((top_k || class_id) && in.pred.rank() == 0)
    fail<ShapeError>(where, "y_pred with a class axis for top_k/class_id", "a scalar y_pred");
  if (top_k) {
    if (*top_k < 1) fail<ValueError>(where, "top_k >= 1", std::to_string(*top_k));
    filter_top_k(in.pred, *top_k);
  }
  if (class_id) {
    const int64_t classes = in.pred.shape.back();
    if (*class_id < 0 || *class_id >= classes)
      fail<ValueError>(where, "class_id in [0, " + std::to_string(classes) + ")", std::to_string(*class_id),
                       "class_id indexes the last axis of y_pred " + shape_str(in.pred.shape) + ".");
    in.pred = take_column(in.pred, *class_id);
    in.label = take_column(in.label, *class_id);
    in.weight = take_column(in.weight, *class_id);
  }
  return in;
}

void accumulate_confusion(ConfusionCounts& counts, const ConfusionInputs& in, const std::vector<double>& thresholds,
                          bool evenly, int64_t begin, int64_t stride) {
  const size_t n = thresholds.size();
  const int64_t size = in.pred.size();
  if (!evenly) {
    for (int64_t i = begin; i < size; i += stride) {
      const double p = in.pred.data[static_cast<size_t>(i)], w = in.weight.data[static_cast<size_t>(i)];
      const bool positive = in.label.data[static_cast<size_t>(i)] != 0.0;
      for (size_t j = 0; j < n; ++j) {
        const bool predicted = p > thresholds[j];
        (positive ? (predicted ? counts.tp : counts.fn) : (predicted ? counts.fp : counts.tn))[j] += w;
      }
    }
    return;
  }
  // Keras's bucket method: bucket ceil(p * (n - 1)) - 1 holds the predictions above exactly the
  // thresholds at or below it; with the -eps/1+eps end points the first bucket takes everything
  // below it (Keras's relu of the index).
  const bool with_epsilon = n > 0 && (thresholds.front() < 0.0 || thresholds.back() > 1.0);
  std::vector<double> pos_bucket(n, 0.0), neg_bucket(n, 0.0);
  double total_pos = 0, total_neg = 0;
  const float scale = static_cast<float>(n) - 1.0f;
  for (int64_t i = begin; i < size; i += stride) {
    const double w = in.weight.data[static_cast<size_t>(i)];
    const bool positive = in.label.data[static_cast<size_t>(i)] != 0.0;
    (positive ? total_pos : total_neg) += w;
    const float scaled = static_cast<float>(in.pred.data[static_cast<size_t>(i)]) * scale;
    if (std::isnan(scaled)) continue;
    double b = std::ceil(static_cast<double>(scaled)) - 1.0;
    if (with_epsilon) b = std::max(b, 0.0);
    if (b < 0) continue;
    const size_t bucket = static_cast<size_t>(std::min(b, static_cast<double>(n) - 1.0));
    (positive ? pos_bucket : neg_bucket)[bucket] += w;
  }
  double tp = 0, fp = 0;
  for (size_t j = n; j-- > 0;) {
    tp += pos_bucket[j];
    fp += neg_bucket[j];
    counts.tp[j] += tp;
    counts.fp[j] += fp;
    counts.fn[j] += total_pos - tp;
    counts.tn[j] += total_neg - fp;
  }
}

std::vector<double> parse_thresholds(const std::string& where, const Thresholds& given, double fallback) {
  if (given.none()) return {f32(fallback)};
  std::vector<double> out;
  for (double v : given.values) {
    if (!(v >= 0.0 && v <= 1.0))
      fail<ValueError>(where, "threshold values in [0, 1]", std::to_string(v));
    out.push_back(f32(v));
  }
  return out;
}

std::vector<double> divide_no_nan(const std::vector<double>& num, const std::vector<double>& other) {
  std::vector<double> out(num.size());
  for (size_t i = 0; i < num.size(); ++i) {
    const double d = num[i] + other[i];
    out[i] = d == 0.0 ? 0.0 : num[i] / d;
  }
  return out;
}

// ---- Precision / Recall ----

ThresholdedRatio::ThresholdedRatio(const PrecisionRecallOptions& o, const std::string& default_name,
                                   const std::string& cls)
    : Metric(o.name.empty() ? default_name : o.name, o.dtype), options_(o) {
  const std::string w = "Metric '" + name() + "' (" + cls + ")";
  if (o.top_k && *o.top_k < 1) fail<ValueError>(w, "top_k >= 1", std::to_string(*o.top_k));
  if (o.class_id && *o.class_id < 0) fail<ValueError>(w, "class_id >= 0", std::to_string(*o.class_id));
  thresholds_ = parse_thresholds(w, o.thresholds, o.top_k ? kNegInf : 0.5);
  counts_.resize(thresholds_.size());
}

void ThresholdedRatio::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  ConfusionInputs in = prepare_confusion_inputs(where(), y_true, y_pred, sample_weight, options_.top_k, options_.class_id);
  accumulate_confusion(counts_, in, thresholds_, false);
}

std::vector<double> ThresholdedRatio::results() const { return divide_no_nan(counts_.tp, other()); }

double ThresholdedRatio::result() const {
  std::vector<double> r = results();
  if (r.size() == 1) return r[0];
  return std::accumulate(r.begin(), r.end(), 0.0) / static_cast<double>(r.size());
}

Tensor ThresholdedRatio::result_tensor() const {
  std::vector<double> r = results();
  if (r.size() == 1) return Metric::result_tensor();
  return make_values(r, {static_cast<int64_t>(r.size())});
}

void ThresholdedRatio::reset_state() { counts_.reset(); }

json ThresholdedRatio::get_config() const {
  json c = Metric::get_config();
  c["thresholds"] = options_.thresholds.to_json();
  c["top_k"] = config::optional_json(options_.top_k);
  c["class_id"] = config::optional_json(options_.class_id);
  return c;
}

std::vector<double> ThresholdedRatio::state() const {
  std::vector<double> s;
  for (const auto* v : {&counts_.tp, &counts_.fp, &counts_.tn, &counts_.fn}) s.insert(s.end(), v->begin(), v->end());
  return s;
}

void ThresholdedRatio::set_state(const std::vector<double>& values) {
  const size_t n = thresholds_.size();
  if (values.size() != 4 * n)
    fail<ValueError>(where(), std::to_string(4 * n) + " state values (tp, fp, tn, fn per threshold)",
                     std::to_string(values.size()));
  auto at = values.begin();
  for (auto* v : {&counts_.tp, &counts_.fp, &counts_.tn, &counts_.fn}) {
    v->assign(at, at + static_cast<std::ptrdiff_t>(n));
    at += static_cast<std::ptrdiff_t>(n);
  }
}

std::shared_ptr<PrecisionImpl> Precision(const PrecisionRecallOptions& o) { return std::make_shared<PrecisionImpl>(o); }
std::shared_ptr<RecallImpl> Recall(const PrecisionRecallOptions& o) { return std::make_shared<RecallImpl>(o); }

PrecisionRecallOptions precision_recall_options_from_config(const json& c) {
  PrecisionRecallOptions o;
  read_base_config(c, o.name, o.dtype);
  if (c.is_object() && c.contains("thresholds")) o.thresholds = Thresholds::from_json(c["thresholds"]);
  config::read(c, "top_k", o.top_k);
  config::read(c, "class_id", o.class_id);
  return o;
}

namespace {
const bool registered = [] {
  register_metric("Precision", [](const json& c) -> MetricPtr { return Precision(precision_recall_options_from_config(c)); },
                  {"precision"});
  register_metric("Recall", [](const json& c) -> MetricPtr { return Recall(precision_recall_options_from_config(c)); },
                  {"recall"});
  return true;
}();
}  // namespace

}  // namespace keras::metrics
