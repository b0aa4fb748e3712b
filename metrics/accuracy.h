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

// The accuracy classes: one template over the options type, since they differ only in what the
// options type fixes: the Keras class name (the factory's name below, e.g.
// "TopKCategoricalAccuracy"), the per-sample rule (the functional form above; both are looked
// up in accuracy.cpp), and the extra argument, threshold or k, where the metric has one
// (get_config adds it to Metric's keys). The six instances are compiled once, in accuracy.cpp.
template <class Options>
class AccuracyImplOf : public AccuracyMetric {
 public:
  // ValueError naming the metric when the options hold k < 1.
  explicit AccuracyImplOf(const Options& o = {});
  std::string class_name() const override;
  json get_config() const override;
  double threshold() const requires requires(const Options& o) { o.threshold; } { return options_.threshold; }
  int k() const requires requires(const Options& o) { o.k; } { return options_.k; }

 protected:
  HostArray matches(const Tensor& y_true, const Tensor& y_pred) const override;

 private:
  Options options_;
};

struct AccuracyOptions {
  std::string name = "accuracy";
  std::string dtype = "float32";
};
struct BinaryAccuracyOptions {
  double threshold = 0.5;
  std::string name = "binary_accuracy";
  std::string dtype = "float32";
};
struct CategoricalAccuracyOptions {
  std::string name = "categorical_accuracy";
  std::string dtype = "float32";
};
struct SparseCategoricalAccuracyOptions {
  std::string name = "sparse_categorical_accuracy";
  std::string dtype = "float32";
};
struct TopKCategoricalAccuracyOptions {
  int k = 5;  // >= 1 (ValueError otherwise)
  std::string name = "top_k_categorical_accuracy";
  std::string dtype = "float32";
};
struct SparseTopKCategoricalAccuracyOptions {
  int k = 5;  // >= 1 (ValueError otherwise)
  std::string name = "sparse_top_k_categorical_accuracy";
  std::string dtype = "float32";
};

extern template class AccuracyImplOf<AccuracyOptions>;
extern template class AccuracyImplOf<BinaryAccuracyOptions>;
extern template class AccuracyImplOf<CategoricalAccuracyOptions>;
extern template class AccuracyImplOf<SparseCategoricalAccuracyOptions>;
extern template class AccuracyImplOf<TopKCategoricalAccuracyOptions>;
extern template class AccuracyImplOf<SparseTopKCategoricalAccuracyOptions>;

using AccuracyImpl = AccuracyImplOf<AccuracyOptions>;
using BinaryAccuracyImpl = AccuracyImplOf<BinaryAccuracyOptions>;
using CategoricalAccuracyImpl = AccuracyImplOf<CategoricalAccuracyOptions>;
using SparseCategoricalAccuracyImpl = AccuracyImplOf<SparseCategoricalAccuracyOptions>;
using TopKCategoricalAccuracyImpl = AccuracyImplOf<TopKCategoricalAccuracyOptions>;
using SparseTopKCategoricalAccuracyImpl = AccuracyImplOf<SparseTopKCategoricalAccuracyOptions>;

std::shared_ptr<AccuracyImpl> Accuracy(const AccuracyOptions& options = {});
std::shared_ptr<BinaryAccuracyImpl> BinaryAccuracy(const BinaryAccuracyOptions& options = {});
std::shared_ptr<CategoricalAccuracyImpl> CategoricalAccuracy(const CategoricalAccuracyOptions& options = {});
std::shared_ptr<SparseCategoricalAccuracyImpl> SparseCategoricalAccuracy(const SparseCategoricalAccuracyOptions& options = {});
std::shared_ptr<TopKCategoricalAccuracyImpl> TopKCategoricalAccuracy(const TopKCategoricalAccuracyOptions& options = {});
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
