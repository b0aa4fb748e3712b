#include "metrics/accuracy.h"

#include <cmath>
#include <limits>
#include <string_view>

#include "losses/loss.h"

namespace keras::metrics {

namespace {

// y_true converted to y_pred's dtype, as Keras's convert_to_tensor(y_true, dtype=y_pred.dtype).
HostArray true_like_pred(const Tensor& y_true, const Tensor& y_pred) {
  HostArray t = to_host(y_true);
  for (double& v : t.data) v = cast_like(v, y_pred.dtype());
  return t;
}

void require_defined(const std::string& where, const Tensor& y_true, const Tensor& y_pred) {
  if (!y_true.defined() || !y_pred.defined()) fail<ValueError>(where, "defined y_true and y_pred", "an undefined tensor");
}

void require_same_shape(const std::string& where, const Shape& t, const Shape& p) {
  if (t != p)
    fail<ShapeError>(where, "y_true and y_pred of one shape", "y_true " + shape_str(t) + " and y_pred " + shape_str(p));
}

// Sparse labels must have y_pred's shape without the class axis (a trailing 1 allowed).
void require_label_shape(const std::string& where, const HostArray& labels, const HostArray& pred) {
  if (pred.rank() == 0) fail<ShapeError>(where, "y_pred with a class axis", "a scalar y_pred");
  Shape batch(pred.shape.begin(), pred.shape.end() - 1);
  Shape got = labels.shape;
  if (got.size() == pred.shape.size() && got.back() == 1) got.pop_back();
  if (got != batch)
    fail<ShapeError>(where, "labels of shape " + shape_str(batch) + " for y_pred " + shape_str(pred.shape),
                     "y_true " + shape_str(labels.shape),
                     "Use categorical accuracy for one-hot labels.");
}

bool in_top_k(const double* row, int64_t classes, double label, int k) {
  if (!(label >= 0 && label < static_cast<double>(classes))) return false;
  double at_label = row[static_cast<int64_t>(label)];
  if (std::isnan(at_label)) at_label = -std::numeric_limits<double>::infinity();
  int64_t larger = 0;
  for (int64_t j = 0; j < classes; ++j) larger += row[j] > at_label ? 1 : 0;
  return larger < k;
}

void check_k(const std::string& where, int k) {
  if (k < 1) fail<ValueError>(where, "k >= 1", std::to_string(k));
}

HostArray accuracy_host(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  require_defined(where, y_true, y_pred);
  HostArray p = to_host(y_pred), t = true_like_pred(y_true, y_pred);
  squeeze_or_expand(t, p);
  require_same_shape(where, t.shape, p.shape);
  HostArray out{p.shape, std::vector<double>(p.data.size())};
  for (size_t i = 0; i < p.data.size(); ++i) out.data[i] = t.data[i] == p.data[i] ? 1.0 : 0.0;
  return out;
}

HostArray binary_host(const Tensor& y_true, const Tensor& y_pred, double threshold, const std::string& where) {
  require_defined(where, y_true, y_pred);
  HostArray p = to_host(y_pred), t = true_like_pred(y_true, y_pred);
  squeeze_or_expand(t, p);
  require_same_shape(where, t.shape, p.shape);
  const double thr = cast_like(threshold, y_pred.dtype());
  HostArray out{p.shape, std::vector<double>(p.data.size())};
  for (size_t i = 0; i < p.data.size(); ++i) out.data[i] = t.data[i] == (p.data[i] > thr ? 1.0 : 0.0) ? 1.0 : 0.0;
  return out;
}

// Applies `match(true_row, pred_row, classes)` to each row of two same-shaped arrays.
template <class F>
HostArray per_row(const HostArray& t, const HostArray& p, F&& match) {
  const int64_t classes = p.shape.back();
  Shape batch(p.shape.begin(), p.shape.end() - 1);
  const int64_t n = shape_numel(batch);
  HostArray out{batch, std::vector<double>(static_cast<size_t>(n))};
  for (int64_t i = 0; i < n; ++i)
    out.data[static_cast<size_t>(i)] = match(t.data.data() + i * classes, p.data.data() + i * classes, classes) ? 1.0 : 0.0;
  return out;
}

HostArray categorical_host(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  require_defined(where, y_true, y_pred);
  HostArray p = to_host(y_pred), t = to_host(y_true);
  require_same_shape(where, t.shape, p.shape);
  if (p.rank() == 0 || p.shape.back() == 0) fail<ShapeError>(where, "y_pred with a non-empty class axis", shape_str(p.shape));
  return per_row(t, p, [](const double* tr, const double* pr, int64_t c) { return first_argmax(tr, c) == first_argmax(pr, c); });
}

HostArray sparse_host(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  require_defined(where, y_true, y_pred);
  HostArray p = to_host(y_pred), t = true_like_pred(y_true, y_pred);
  require_label_shape(where, t, p);
  const int64_t classes = p.shape.back();
  Shape batch(p.shape.begin(), p.shape.end() - 1);
  HostArray out{batch, std::vector<double>(static_cast<size_t>(shape_numel(batch)))};
  if (classes == 0) return out;
  for (size_t i = 0; i < out.data.size(); ++i) {
    double predicted = cast_like(static_cast<double>(first_argmax(p.data.data() + i * classes, classes)), y_pred.dtype());
    out.data[i] = t.data[i] == predicted ? 1.0 : 0.0;
  }
  return out;
}

HostArray top_k_host(const Tensor& y_true, const Tensor& y_pred, int k, const std::string& where) {
  require_defined(where, y_true, y_pred);
  check_k(where, k);
  HostArray p = to_host(y_pred), t = to_host(y_true);
  require_same_shape(where, t.shape, p.shape);
  if (p.rank() == 0 || p.shape.back() == 0) fail<ShapeError>(where, "y_pred with a non-empty class axis", shape_str(p.shape));
  return per_row(t, p, [k](const double* tr, const double* pr, int64_t c) {
    return in_top_k(pr, c, static_cast<double>(first_argmax(tr, c)), k);
  });
}

HostArray sparse_top_k_host(const Tensor& y_true, const Tensor& y_pred, int k, const std::string& where) {
  require_defined(where, y_true, y_pred);
  check_k(where, k);
  HostArray p = to_host(y_pred), t = to_host(y_true);
  require_label_shape(where, t, p);
  const int64_t classes = p.shape.back();
  Shape batch(p.shape.begin(), p.shape.end() - 1);
  HostArray out{batch, std::vector<double>(static_cast<size_t>(shape_numel(batch)))};
  for (size_t i = 0; i < out.data.size(); ++i)
    out.data[i] = in_top_k(p.data.data() + i * classes, classes, cast_like(t.data[i], DType::int32), k) ? 1.0 : 0.0;
  return out;
}

Tensor as_tensor(const HostArray& a) { return make_values(a.data, a.shape); }

}  // namespace

// ---- functional forms ----

Tensor accuracy(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  return as_tensor(accuracy_host(y_true, y_pred, where));
}
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold, const std::string& where) {
  return as_tensor(binary_host(y_true, y_pred, threshold, where));
}
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  return as_tensor(categorical_host(y_true, y_pred, where));
}
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  return as_tensor(sparse_host(y_true, y_pred, where));
}
Tensor top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k, const std::string& where) {
  return as_tensor(top_k_host(y_true, y_pred, k, where));
}
Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k, const std::string& where) {
  return as_tensor(sparse_top_k_host(y_true, y_pred, k, where));
}

// ---- classes ----

void AccuracyMetric::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  accumulate(matches(y_true, y_pred), losses::apply_mask(sample_weight, y_pred.keras_mask(), DType::float32, "sum"));
}

namespace {
// What sets the accuracy classes apart, by options type: the Keras class name, and the
// per-sample rule (a host form above, given the options and the metric's `where`).
template <class Options>
constexpr std::string_view kClassName = {};  // specialized for each options type
template <> constexpr std::string_view kClassName<AccuracyOptions> = "Accuracy";
template <> constexpr std::string_view kClassName<BinaryAccuracyOptions> = "BinaryAccuracy";
template <> constexpr std::string_view kClassName<CategoricalAccuracyOptions> = "CategoricalAccuracy";
template <> constexpr std::string_view kClassName<SparseCategoricalAccuracyOptions> = "SparseCategoricalAccuracy";
template <> constexpr std::string_view kClassName<TopKCategoricalAccuracyOptions> = "TopKCategoricalAccuracy";
template <> constexpr std::string_view kClassName<SparseTopKCategoricalAccuracyOptions> = "SparseTopKCategoricalAccuracy";

using In = const Tensor&;
using Where = const std::string&;
HostArray rule(const AccuracyOptions&, In t, In p, Where w) { return accuracy_host(t, p, w); }
HostArray rule(const BinaryAccuracyOptions& o, In t, In p, Where w) { return binary_host(t, p, o.threshold, w); }
HostArray rule(const CategoricalAccuracyOptions&, In t, In p, Where w) { return categorical_host(t, p, w); }
HostArray rule(const SparseCategoricalAccuracyOptions&, In t, In p, Where w) { return sparse_host(t, p, w); }
HostArray rule(const TopKCategoricalAccuracyOptions& o, In t, In p, Where w) { return top_k_host(t, p, o.k, w); }
HostArray rule(const SparseTopKCategoricalAccuracyOptions& o, In t, In p, Where w) { return sparse_top_k_host(t, p, o.k, w); }
}  // namespace

template <class Options>
AccuracyImplOf<Options>::AccuracyImplOf(const Options& o) : AccuracyMetric(o.name, o.dtype), options_(o) {
  if constexpr (requires { o.k; }) check_k(where(), o.k);
}

template <class Options>
std::string AccuracyImplOf<Options>::class_name() const {
  static_assert(!kClassName<Options>.empty(), "an accuracy options type without a class name");
  return std::string(kClassName<Options>);
}

template <class Options>
json AccuracyImplOf<Options>::get_config() const {
  json c = Metric::get_config();
  if constexpr (requires { options_.threshold; }) c["threshold"] = options_.threshold;
  if constexpr (requires { options_.k; }) c["k"] = options_.k;
  return c;
}

template <class Options>
HostArray AccuracyImplOf<Options>::matches(const Tensor& t, const Tensor& p) const {
  return rule(options_, t, p, where());
}

template class AccuracyImplOf<AccuracyOptions>;
template class AccuracyImplOf<BinaryAccuracyOptions>;
template class AccuracyImplOf<CategoricalAccuracyOptions>;
template class AccuracyImplOf<SparseCategoricalAccuracyOptions>;
template class AccuracyImplOf<TopKCategoricalAccuracyOptions>;
template class AccuracyImplOf<SparseTopKCategoricalAccuracyOptions>;

std::shared_ptr<AccuracyImpl> Accuracy(const AccuracyOptions& o) { return std::make_shared<AccuracyImpl>(o); }
std::shared_ptr<BinaryAccuracyImpl> BinaryAccuracy(const BinaryAccuracyOptions& o) {
  return std::make_shared<BinaryAccuracyImpl>(o);
}
std::shared_ptr<CategoricalAccuracyImpl> CategoricalAccuracy(const CategoricalAccuracyOptions& o) {
  return std::make_shared<CategoricalAccuracyImpl>(o);
}
std::shared_ptr<SparseCategoricalAccuracyImpl> SparseCategoricalAccuracy(const SparseCategoricalAccuracyOptions& o) {
  return std::make_shared<SparseCategoricalAccuracyImpl>(o);
}
std::shared_ptr<TopKCategoricalAccuracyImpl> TopKCategoricalAccuracy(const TopKCategoricalAccuracyOptions& o) {
  return std::make_shared<TopKCategoricalAccuracyImpl>(o);
}
std::shared_ptr<SparseTopKCategoricalAccuracyImpl> SparseTopKCategoricalAccuracy(
    const SparseTopKCategoricalAccuracyOptions& o) {
  return std::make_shared<SparseTopKCategoricalAccuracyImpl>(o);
}

// ---- resolution of "accuracy" ----

MetricPtr resolve_accuracy(const std::string& loss, const Shape& y_true_shape, const Shape& y_pred_shape,
                           const std::string& name) {
  const std::string cls = loss.empty() ? std::string() : losses::canonical_class_name(loss);
  if (cls == "BinaryCrossentropy") return BinaryAccuracy({.name = name});
  if (cls == "CategoricalCrossentropy") return CategoricalAccuracy({.name = name});
  if (cls == "SparseCategoricalCrossentropy") return SparseCategoricalAccuracy({.name = name});
  const bool is_binary = !y_pred_shape.empty() && y_pred_shape.back() == 1;
  const bool is_sparse = y_true_shape.size() < y_pred_shape.size() ||
                         (!y_true_shape.empty() && !y_pred_shape.empty() && y_true_shape.back() == 1 &&
                          y_pred_shape.back() > 1);
  if (is_binary) return BinaryAccuracy({.name = name});
  if (is_sparse) return SparseCategoricalAccuracy({.name = name});
  return CategoricalAccuracy({.name = name});
}

MetricPtr resolve_accuracy(const losses::LossPtr& loss, const Shape& y_true_shape, const Shape& y_pred_shape,
                           const std::string& name) {
  return resolve_accuracy(loss ? loss->class_name() : std::string(), y_true_shape, y_pred_shape, name);
}

namespace {
template <class Options>
Options read_options(const json& c) {
  Options o;
  read_base_config(c, o.name, o.dtype);
  if constexpr (requires { o.k; })
    if (c.contains("k") && c["k"].is_number_integer()) o.k = c["k"].get<int>();
  if constexpr (requires { o.threshold; })
    if (c.contains("threshold") && c["threshold"].is_number()) o.threshold = c["threshold"].get<double>();
  return o;
}

// Registers the class under its Keras class name and `aliases`, built from a config.
template <class Options>
void register_accuracy(const std::vector<std::string>& aliases) {
  register_metric(
      std::string(kClassName<Options>),
      [](const json& c) -> MetricPtr { return std::make_shared<AccuracyImplOf<Options>>(read_options<Options>(c)); },
      aliases);
}

const bool registered = [] {
  register_accuracy<AccuracyOptions>({"accuracy", "acc"});
  register_accuracy<BinaryAccuracyOptions>({"binary_accuracy"});
  register_accuracy<CategoricalAccuracyOptions>({"categorical_accuracy"});
  register_accuracy<SparseCategoricalAccuracyOptions>({"sparse_categorical_accuracy"});
  register_accuracy<TopKCategoricalAccuracyOptions>({"top_k_categorical_accuracy"});
  register_accuracy<SparseTopKCategoricalAccuracyOptions>({"sparse_top_k_categorical_accuracy"});
  return true;
}();
}  // namespace

}  // namespace keras::metrics
