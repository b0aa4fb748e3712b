#include "losses/crossentropy.h"

#include <cmath>

#include "backend/ops.h"
#include "losses/sparse_softmax_cross_entropy.h"

namespace keras::losses {

namespace {

std::pair<Tensor, Tensor> prepare(const Tensor& y_true, const Tensor& y_pred, const std::string& where) {
  DType dt = compute_dtype(y_pred);
  Tensor p = to_compute(y_pred, dt, y_pred.device());
  Tensor t = to_compute(y_true, dt, y_pred.device());
  std::tie(t, p) = squeeze_or_expand_to_same_rank(t, p);
  check_same_shape(where, t, p);
  return {t, p};
}

void check_smoothing(const std::string& where, double label_smoothing) {
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    fail<ValueError>(where, "label_smoothing in [0, 1]", std::to_string(label_smoothing));
}

// Integer class labels on the host, validated against `classes` (the IndexError names the
// label, its flat position and the number of classes).
std::vector<int64_t> host_labels(const Tensor& y_true, int64_t classes, const std::string& where) {
  std::vector<int64_t> labels;
  if (is_integral(y_true.dtype()) || y_true.dtype() == DType::boolean) {
    labels = y_true.to_vector<int64_t>();
  } else {
    std::vector<double> v = y_true.to_vector<double>();
    labels.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i]) || v[i] != std::floor(v[i]))
        fail<ValueError>(where, "integer class labels", "label " + std::to_string(v[i]) + " at position " + std::to_string(i),
                         "Sparse losses take class indices; use categorical_crossentropy for one-hot labels.");
      labels[i] = static_cast<int64_t>(v[i]);
    }
  }
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      fail<IndexError>(where, "labels in [0, " + std::to_string(classes) + ") for " + std::to_string(classes) + " classes",
                       "label " + std::to_string(labels[i]) + " at position " + std::to_string(i));
  return labels;
}

// One-hot rows in dtype `dt` (the constant that picks each sample's probability).
Tensor host_one_hot(const std::vector<int64_t>& labels, int64_t classes, DType dt, Device device) {
  const int64_t n = static_cast<int64_t>(labels.size());
  return dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> v(static_cast<size_t>(n * classes), T(0));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * classes + labels[static_cast<size_t>(i)])] = T(1);
    return Tensor::from_vector(v, {n, classes}, device);
  });
}

}  // namespace

Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits, double label_smoothing,
                           int axis, const std::string& where) {
  check_smoothing(where, label_smoothing);
  auto [t, p] = prepare(y_true, y_pred, where);
  if (label_smoothing > 0) t = ops::add(ops::multiply(t, 1.0 - label_smoothing), 0.5 * label_smoothing);
  Tensor elementwise;
  if (from_logits) {
    // softplus(x) - y*x equals TF's max(x,0) - x*y + log(1+exp(-|x|)) and is smooth at 0.
    elementwise = ops::subtract(ops::softplus(p), ops::multiply(t, p));
  } else {
    Tensor q = ops::clip(p, kEpsilon, 1.0 - kEpsilon);
    Tensor pos = ops::multiply(t, ops::log(q));
    Tensor neg = ops::multiply(ops::add(ops::negative(t), 1.0), ops::log(ops::add(ops::negative(q), 1.0)));
    elementwise = ops::negative(ops::add(pos, neg));
  }
  if (elementwise.rank() == 0) return elementwise;
  normalize_axis(axis, elementwise.rank(), where);
  return ops::mean(elementwise, {axis});
}

Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits, double label_smoothing,
                                int axis, const std::string& where) {
  check_smoothing(where, label_smoothing);
  auto [t, p] = prepare(y_true, y_pred, where);
  if (p.rank() == 0) fail<ShapeError>(where, "y_pred with a class axis", "a scalar y_pred");
  const int ax = normalize_axis(axis, p.rank(), where);
  if (label_smoothing > 0) {
    // Keras divides by the last extent; for the class axis that is the same unless axis != -1,
    // where the class axis's extent is the meaningful count.
    const double classes = static_cast<double>(p.shape()[static_cast<size_t>(ax)]);
    t = ops::add(ops::multiply(t, 1.0 - label_smoothing), label_smoothing / classes);
  }
  Tensor log_prob;
  if (from_logits) {
    log_prob = ops::log_softmax(p, ax);
  } else {
    Tensor q = ops::divide(p, ops::sum(p, {ax}, true));
    log_prob = ops::log(ops::clip(q, kEpsilon, 1.0 - kEpsilon));
  }
  return ops::negative(ops::sum(ops::multiply(t, log_prob), {ax}));
}

Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits,
                                       const std::string& where) {
  DType dt = compute_dtype(y_pred);
  Tensor p = to_compute(y_pred, dt, y_pred.device());
  if (p.rank() == 0) fail<ShapeError>(where, "y_pred with a class axis", "a scalar y_pred");
  Shape batch_shape(p.shape().begin(), p.shape().end() - 1);
  Shape label_shape = y_true.shape();
  if (label_shape.size() == p.shape().size() && !label_shape.empty() && label_shape.back() == 1) label_shape.pop_back();
  if (label_shape != batch_shape) {
    Shape with_one = batch_shape;
    with_one.push_back(1);
    fail<ShapeError>(where, "integer labels of shape " + shape_str(batch_shape) + " or " + shape_str(with_one) +
                                " for y_pred " + shape_str(p.shape()),
                     "y_true " + shape_str(y_true.shape()),
                     "For one-hot labels use categorical_crossentropy.");
  }
  const int64_t classes = p.shape().back();
  const int64_t n = shape_numel(batch_shape);
  std::vector<int64_t> labels = host_labels(y_true, classes, where);
  const Shape rows_shape{n, classes};
  Tensor rows = p.shape() == rows_shape ? p : p.requires_grad() ? ops::reshape(p, rows_shape) : p.contiguous().view(rows_shape);
  Tensor loss;
  if (from_logits) {
    loss = ops::sparse_softmax_cross_entropy(rows, Tensor::from_vector(labels, {n}, p.device()));
  } else {
    // -log(clip(p[y] / sum(p))) is Keras's -sum(one_hot * log(clip(p / sum(p)))) term by term:
    // the clip is elementwise and the other classes are multiplied by 0.
    Tensor picked = ops::sum(ops::multiply(rows, host_one_hot(labels, classes, dt, p.device())), {1});
    Tensor q = ops::divide(picked, ops::sum(rows, {1}));
    loss = ops::negative(ops::log(ops::clip(q, kEpsilon, 1.0 - kEpsilon)));
  }
  if (loss.shape() == batch_shape) return loss;
  return loss.requires_grad() ? ops::reshape(loss, batch_shape) : loss.view(batch_shape);
}

// ---- BinaryCrossentropy ----

namespace {
template <class Options>
void read_ce_config(const json& c, Options& o) {
  read_base_config(c, o.reduction, o.name);
  if (c.contains("from_logits") && c["from_logits"].is_boolean()) o.from_logits = c["from_logits"].get<bool>();
  if (c.contains("label_smoothing") && c["label_smoothing"].is_number())
    o.label_smoothing = c["label_smoothing"].get<double>();
  if (c.contains("axis") && c["axis"].is_number_integer()) o.axis = c["axis"].get<int>();
}
}  // namespace

BinaryCrossentropyImpl::BinaryCrossentropyImpl(const BinaryCrossentropyOptions& o)
    : Loss(o.name, o.reduction), options_(o) {
  options_.reduction = reduction();
  check_smoothing("Loss '" + o.name + "' (BinaryCrossentropy)", o.label_smoothing);
}
Tensor BinaryCrossentropyImpl::call(const Tensor& y_true, const Tensor& y_pred) const {
  return binary_crossentropy(y_true, y_pred, options_.from_logits, options_.label_smoothing, options_.axis, where());
}
json BinaryCrossentropyImpl::get_config() const {
  json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = options_.axis;
  return c;
}
std::shared_ptr<BinaryCrossentropyImpl> BinaryCrossentropyImpl::from_config(const json& config) {
  BinaryCrossentropyOptions o;
  read_ce_config(config, o);
  return std::make_shared<BinaryCrossentropyImpl>(o);
}
std::shared_ptr<BinaryCrossentropyImpl> BinaryCrossentropy(const BinaryCrossentropyOptions& options) {
  return std::make_shared<BinaryCrossentropyImpl>(options);
}

// ---- CategoricalCrossentropy ----

CategoricalCrossentropyImpl::CategoricalCrossentropyImpl(const CategoricalCrossentropyOptions& o)
    : Loss(o.name, o.reduction), options_(o) {
  options_.reduction = reduction();
  check_smoothing("Loss '" + o.name + "' (CategoricalCrossentropy)", o.label_smoothing);
}
Tensor CategoricalCrossentropyImpl::call(const Tensor& y_true, const Tensor& y_pred) const {
  return categorical_crossentropy(y_true, y_pred, options_.from_logits, options_.label_smoothing, options_.axis,
                                  where());
}
json CategoricalCrossentropyImpl::get_config() const {
  json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = options_.axis;
  return c;
}
std::shared_ptr<CategoricalCrossentropyImpl> CategoricalCrossentropyImpl::from_config(const json& config) {
  CategoricalCrossentropyOptions o;
  read_ce_config(config, o);
  return std::make_shared<CategoricalCrossentropyImpl>(o);
}
std::shared_ptr<CategoricalCrossentropyImpl> CategoricalCrossentropy(const CategoricalCrossentropyOptions& options) {
  return std::make_shared<CategoricalCrossentropyImpl>(options);
}

// ---- SparseCategoricalCrossentropy ----

SparseCategoricalCrossentropyImpl::SparseCategoricalCrossentropyImpl(const SparseCategoricalCrossentropyOptions& o)
    : Loss(o.name, o.reduction), options_(o) {
  options_.reduction = reduction();
}
Tensor SparseCategoricalCrossentropyImpl::call(const Tensor& y_true, const Tensor& y_pred) const {
  return sparse_categorical_crossentropy(y_true, y_pred, options_.from_logits, where());
}
json SparseCategoricalCrossentropyImpl::get_config() const {
  json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["ignore_class"] = nullptr;
  return c;
}
std::shared_ptr<SparseCategoricalCrossentropyImpl> SparseCategoricalCrossentropyImpl::from_config(const json& c) {
  SparseCategoricalCrossentropyOptions o;
  read_base_config(c, o.reduction, o.name);
  if (c.contains("from_logits") && c["from_logits"].is_boolean()) o.from_logits = c["from_logits"].get<bool>();
  if (c.contains("ignore_class") && !c["ignore_class"].is_null())
    fail<NotImplementedError>("Loss '" + o.name + "' (SparseCategoricalCrossentropy)", "ignore_class null",
                              c["ignore_class"].dump(), "ignore_class is not supported yet.");
  return std::make_shared<SparseCategoricalCrossentropyImpl>(o);
}
std::shared_ptr<SparseCategoricalCrossentropyImpl> SparseCategoricalCrossentropy(
    const SparseCategoricalCrossentropyOptions& options) {
  return std::make_shared<SparseCategoricalCrossentropyImpl>(options);
}

namespace {
const bool registered = [] {
  register_loss("BinaryCrossentropy", [](const json& c) -> LossPtr { return BinaryCrossentropyImpl::from_config(c); },
                {"binary_crossentropy", "bce", "BCE"});
  register_loss("CategoricalCrossentropy",
                [](const json& c) -> LossPtr { return CategoricalCrossentropyImpl::from_config(c); },
                {"categorical_crossentropy"});
  register_loss("SparseCategoricalCrossentropy",
                [](const json& c) -> LossPtr { return SparseCategoricalCrossentropyImpl::from_config(c); },
                {"sparse_categorical_crossentropy"});
  return true;
}();
}  // namespace

}  // namespace keras::losses
