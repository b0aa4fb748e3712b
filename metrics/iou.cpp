#include "metrics/iou.h"

#include <cmath>

#include "metrics/host_array.h"
#include "metrics/metric_config.h"

namespace keras::metrics {

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

// Index of the first maximum along `axis` (negative counts from the end); that axis is removed.
HostArray argmax_axis(const std::string& where, const HostArray& a, int axis) {
  const int rank = a.rank();
  const int ax = axis < 0 ? axis + rank : axis;
  if (ax < 0 || ax >= rank || a.shape[static_cast<size_t>(ax)] == 0)
    fail<ShapeError>(where, "scores with a non-empty axis " + std::to_string(axis), "shape " + shape_str(a.shape),
                     "Set sparse_y_true/sparse_y_pred to true for class ids.");
  int64_t outer = 1, inner = 1;
  const int64_t n = a.shape[static_cast<size_t>(ax)];
  for (int i = 0; i < ax; ++i) outer *= a.shape[static_cast<size_t>(i)];
  for (int i = ax + 1; i < rank; ++i) inner *= a.shape[static_cast<size_t>(i)];
  HostArray out{a.shape, std::vector<double>(static_cast<size_t>(outer * inner))};
  out.shape.erase(out.shape.begin() + ax);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j)
        if (a.data[static_cast<size_t>((o * n + j) * inner + i)] > a.data[static_cast<size_t>((o * n + best) * inner + i)])
          best = j;
      out.data[static_cast<size_t>(o * inner + i)] = static_cast<double>(best);
    }
  return out;
}

}  // namespace

MeanIoUImpl::MeanIoUImpl(const MeanIoUOptions& o) : Metric(o.name, o.dtype), options_(o) {
  if (o.num_classes < 1)
    fail<ValueError>("Metric '" + name() + "' (MeanIoU)", "num_classes >= 1", std::to_string(o.num_classes));
  matrix_.assign(static_cast<size_t>(o.num_classes) * static_cast<size_t>(o.num_classes), 0.0);
}

void MeanIoUImpl::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (!y_true.defined() || !y_pred.defined()) fail<ValueError>(where(), "defined y_true and y_pred", "an undefined tensor");
  HostArray t = to_host(y_true), p = to_host(y_pred);
  if (!options_.sparse_y_true) t = argmax_axis(where(), t, options_.axis);
  if (!options_.sparse_y_pred) p = argmax_axis(where(), p, options_.axis);
  if (t.size() != p.size())
    fail<ShapeError>(where(), "as many labels as predictions",
                     "y_true " + shape_str(y_true.shape()) + " and y_pred " + shape_str(y_pred.shape()));
  const size_t n = t.data.size();
  std::vector<double> w(n, 1.0);
  if (sample_weight.defined()) {
    HostArray sw = to_host(sample_weight);
    if (sw.data.size() == n) w = sw.data;
    else if (sw.data.size() == 1) w.assign(n, sw.data[0]);
    else
      fail<ShapeError>(where(), std::to_string(n) + " sample weights (one per label) or one",
                       "sample_weight of shape " + shape_str(sample_weight.shape()));
  }
  const int64_t c = options_.num_classes;
  for (size_t i = 0; i < n; ++i) {
    double label = cast_like(t.data[i], DType::float32), pred = cast_like(p.data[i], DType::float32);
    double weight = cast_like(w[i], DType::float32);
    if (options_.ignore_class && label == static_cast<double>(*options_.ignore_class)) continue;
    if (weight == 0.0) continue;
    const double li = std::trunc(label), pi = std::trunc(pred);
    for (double v : {li, pi})
      if (!(v >= 0 && v < static_cast<double>(c)))
        fail<IndexError>(where(), "class ids in [0, " + std::to_string(c) + ")", std::to_string(v),
                         "Check num_classes, or set ignore_class for a void label.");
    matrix_[static_cast<size_t>(static_cast<int64_t>(li) * c + static_cast<int64_t>(pi))] += weight;
  }
}

std::vector<double> MeanIoUImpl::per_class() const {
  const size_t c = static_cast<size_t>(options_.num_classes);
  std::vector<double> iou(c);
  for (size_t k = 0; k < c; ++k) {
    double row = 0, col = 0;
    for (size_t j = 0; j < c; ++j) {
      row += matrix_[k * c + j];
      col += matrix_[j * c + k];
    }
    const double tp = matrix_[k * c + k];
    iou[k] = tp / (row + col - tp + kEpsilon);
  }
  return iou;
}

double MeanIoUImpl::result() const {
  const size_t c = static_cast<size_t>(options_.num_classes);
  const std::vector<double> iou = per_class();
  double sum = 0, valid = 0;
  for (size_t k = 0; k < c; ++k) {
    double row = 0, col = 0;
    for (size_t j = 0; j < c; ++j) {
      row += matrix_[k * c + j];
      col += matrix_[j * c + k];
    }
    if (row + col - matrix_[k * c + k] > 1e-9) valid += 1;
    sum += iou[k];
  }
  return sum / (valid + kEpsilon);
}

void MeanIoUImpl::reset_state() { std::fill(matrix_.begin(), matrix_.end(), 0.0); }

json MeanIoUImpl::get_config() const {
  json c = Metric::get_config();
  c["num_classes"] = options_.num_classes;
  c["ignore_class"] = config::optional_json(options_.ignore_class);
  c["sparse_y_true"] = options_.sparse_y_true;
  c["sparse_y_pred"] = options_.sparse_y_pred;
  c["axis"] = options_.axis;
  return c;
}

void MeanIoUImpl::set_state(const std::vector<double>& values) {
  if (values.size() != matrix_.size())
    fail<ValueError>(where(), std::to_string(matrix_.size()) + " state values (the confusion matrix)",
                     std::to_string(values.size()));
  matrix_ = values;
}

std::shared_ptr<MeanIoUImpl> MeanIoUImpl::from_config(const json& c) {
  MeanIoUOptions o;
  read_base_config(c, o.name, o.dtype);
  config::read(c, "num_classes", o.num_classes);
  config::read(c, "ignore_class", o.ignore_class);
  config::read(c, "sparse_y_true", o.sparse_y_true);
  config::read(c, "sparse_y_pred", o.sparse_y_pred);
  config::read(c, "axis", o.axis);
  return std::make_shared<MeanIoUImpl>(o);
}

std::shared_ptr<MeanIoUImpl> MeanIoU(const MeanIoUOptions& options) { return std::make_shared<MeanIoUImpl>(options); }

namespace {
const bool registered = [] {
  register_metric("MeanIoU", [](const json& c) -> MetricPtr { return MeanIoUImpl::from_config(c); }, {"mean_io_u"});
  return true;
}();
}  // namespace

}  // namespace keras::metrics
