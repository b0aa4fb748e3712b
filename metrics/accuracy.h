// Accuracy metrics (keras.metrics): Accuracy, BinaryAccuracy, CategoricalAccuracy,
// SparseCategoricalAccuracy, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, and
// resolve_accuracy, the choice compile() makes for the string "accuracy".
//
// Each is a Mean (metrics/mean.h) of per-sample matches, 1 or 0, computed on the host:
// y_true is first converted to y_pred's dtype as Keras does; argmax ties go to the first
// maximum; "in top k" counts ties in (rank = 1 + number of strictly larger scores).
#pragma once
#include "losses/loss.h"
#include "metrics/mean.h"

namespace keras::metrics {

// ---- functional forms: float32 CPU tensors of matches (1/0). `where` names the caller in
// ShapeErrors. ----

// y_true == y_pred elementwise (after Keras's squeeze/expand of a trailing 1; then equal shapes).
Tensor accuracy(const Tensor& y_true, const Tensor& y_pred, const std::string& where = "accuracy");
// y_true == (y_pred > threshold) elementwise.
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold = 0.5,
                       const std::string& where = "binary_accuracy");
// argmax(y_true) == argmax(y_pred) over the last axis; equal shapes; result shape[:-1].
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, const std::string& where = "categorical_accuracy");
// y_true (labels of shape y_pred.shape[:-1], or with a trailing 1) == argmax(y_pred).
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred,
                                   const std::string& where = "sparse_categorical_accuracy");
// argmax(y_true) is among the k largest of y_pred (ties included); k >= 1.
Tensor top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k = 5,
                                  const std::string& where = "top_k_categorical_accuracy");
// Integer label y_true is among the k largest of y_pred; labels outside [0, C) never match.
Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int k = 5,
                                         const std::string& where = "sparse_top_k_categorical_accuracy");

// Shared body of the accuracy classes: a Mean of host-computed matches, larger is better.
class AccuracyMetric : public MeanImpl {
 public:
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  std::string direction() const override { return "max"; }

 protected:
  AccuracyMetric(const std::string& name, const std::string& dtype) : MeanImpl({.name = name, .dtype = dtype}) {}
  virtual HostArray matches(const Tensor& y_true, const Tensor& y_pred) const = 0;
};

struct AccuracyOptions {
  std::string name = "accuracy";
  std::string dtype = "float32";
};
class AccuracyImpl : public AccuracyMetric {
 public:
  explicit AccuracyImpl(const AccuracyOptions& o = {}) : AccuracyMetric(o.name, o.dtype) {}
  std::string class_name() const override { return "Accuracy"; }

 protected:
  HostArray matches(const Tensor& y_true, const Tensor& y_pred) const override;
};
std::shared_ptr<AccuracyImpl> Accuracy(const AccuracyOptions& options = {});

struct BinaryAccuracyOptions {
  double threshold = 0.5;
  std::string name = "binary_accuracy";
  std::string dtype = "float32";
};
class BinaryAccuracyImpl : public AccuracyMetric {
 public:
  explicit BinaryAccuracyImpl(const BinaryAccuracyOptions& o = {}) : AccuracyMetric(o.name, o.dtype), threshold_(o.threshold) {}
  std::string class_name() const override { return "BinaryAccuracy"; }
  json get_config() const override;  // + threshold
  double threshold() const { return threshold_; }

 protected:
  HostArray matches(const Tensor& y_true, const Tensor& y_pred) const override;

 private:
  double threshold_;
};
std::shared_ptr<BinaryAccuracyImpl> BinaryAccuracy(const BinaryAccuracyOptions& options = {});

struct CategoricalAccuracyOptions {
  std::string name = "categorical_accuracy";
  std::string dtype = "float32";
};
class CategoricalAccuracyImpl : public AccuracyMetric {
 public:
  explicit CategoricalAccuracyImpl(const CategoricalAccuracyOptions& o = {}) : AccuracyMetric(o.name, o.dtype) {}
  std::string class_name() const override { return "CategoricalAccuracy"; }

 protected:
  HostArray matches(const Tensor& y_true, const Tensor& y_pred) const override;
};
std::shared_ptr<CategoricalAccuracyImpl> CategoricalAccuracy(const CategoricalAccuracyOptions& options = {});

struct SparseCategoricalAccuracyOptions {
  std::string name = "sparse_categorical_accuracy";
  std::string dtype = "float32";
};
class SparseCategoricalAccuracyImpl : public AccuracyMetric {
 public:
  explicit SparseCategoricalAccuracyImpl(const SparseCategoricalAccuracyOptions& o = {}) : AccuracyMetric(o.name, o.dtype) {}
  std::string class_name() const override { return "SparseCategoricalAccuracy"; }

 protected:
  HostArray matches(const Tensor& y_true, const Tensor& y_pred) const override;
};
std::shared_ptr<SparseCategoricalAccuracyImpl> SparseCategoricalAccuracy(const SparseCategoricalAccuracyOptions& options = {});

struct TopKCategoricalAccuracyOptions {
  int k = 5;  // >= 1 (ValueError otherwise)
  std::string name = "top_k_categorical_accuracy";
  std::string dtype = "float32";
};
class TopKCategoricalAccuracyImpl : public AccuracyMetric {
 public:
  explicit TopKCategoricalAccuracyImpl(const TopKCategoricalAccuracyOptions& o = {});
  std::string class_name() const override { return "TopKCategoricalAccuracy"; }
  json get_config() const override;  // + k
  int k() const { return k_; }

 protected:
  HostArray matches(const Tensor& y_true, const Tensor& y_pred) const override;

 private:
  int k_;
};
std::shared_ptr<TopKCategoricalAccuracyImpl> TopKCategoricalAccuracy(const TopKCategoricalAccuracyOptions& options = {});

struct SparseTopKCategoricalAccuracyOptions {
  int k = 5;  // >= 1 (ValueError otherwise)
  std::string name = "sparse_top_k_categorical_accuracy";
  std::string dtype = "float32";
};
class SparseTopKCategoricalAccuracyImpl : public AccuracyMetric {
 public:
  explicit SparseTopKCategoricalAccuracyImpl(const SparseTopKCategoricalAccuracyOptions& o = {});
  std::string class_name() const override { return "SparseTopKCategoricalAccuracy"; }
  json get_config() const override;  // + k
  int k() const { return k_; }

 protected:
  HostArray matches(const Tensor& y_true, const Tensor& y_pred) const override;

 private:
  int k_;
};
std::shared_ptr<SparseTopKCategoricalAccuracyImpl> SparseTopKCategoricalAccuracy(
    const SparseTopKCategoricalAccuracyOptions& options = {});

// compile()'s "accuracy"/"acc": the accuracy that fits the loss, named `name`.
//  - BinaryCrossentropy -> BinaryAccuracy, CategoricalCrossentropy -> CategoricalAccuracy,
//    SparseCategoricalCrossentropy -> SparseCategoricalAccuracy (loss given by any identifier
//    losses::get accepts, or as an object);
//  - otherwise (other or unknown loss, empty string, null) Keras 3's shape rule: y_pred's last
//    extent 1 -> binary; y_true of lower rank than y_pred, or y_true's last extent 1 with
//    y_pred's > 1 -> sparse; else categorical. Shapes may hold -1 for unknown extents.
MetricPtr resolve_accuracy(const std::string& loss, const Shape& y_true_shape, const Shape& y_pred_shape,
                           const std::string& name = "accuracy");
MetricPtr resolve_accuracy(const losses::LossPtr& loss, const Shape& y_true_shape, const Shape& y_pred_shape,
                           const std::string& name = "accuracy");

}  // namespace keras::metrics
