// AUC (keras.metrics.AUC): the area under the ROC or precision-recall curve, approximated as
// Keras does from confusion counts at a fixed set of thresholds.
//
// Thresholds: by default num_thresholds evenly spaced, {-eps, 1/(n-1), ..., (n-2)/(n-1), 1+eps}
// (eps = 1e-7), counted with Keras's bucket method; or the given list with -eps and 1+eps added
// (num_thresholds becomes its length + 2). Counting follows metrics/confusion.h (y_pred > t,
// labels positive iff non-zero, sample_weight broadcast); from_logits applies a sigmoid first.
//
// result(): a Riemann sum over consecutive thresholds of (x[i] - x[i+1]) * height, with
// x = false-positive rate, y = recall (ROC) or x = recall, y = precision (PR); height is the
// mean ("interpolation"), min ("minoring") or max ("majoring") of y[i], y[i+1]. PR with
// "interpolation" uses Davis & Goadrich's interpolation of precision between the counts, as
// Keras's interpolate_pr_auc does. Zero denominators give 0 (divide_no_nan), never NaN.
//
// multi_label: y_pred (batch, num_labels); one curve per label, averaged (or weighted by
// label_weights). Otherwise every element is one sample of a single curve, weighted by
// label_weights of its column when given.
#pragma once
#include "metrics/confusion.h"

namespace keras::metrics {

struct AUCOptions {
  int num_thresholds = 200;                // > 1 (ValueError); ignored when thresholds are given
  std::string curve = "ROC";               // "ROC" or "PR" (any case)
  std::string summation_method = "interpolation";  // or "minoring", "majoring" (any case)
  std::vector<double> thresholds;          // each in [0, 1]; empty: evenly spaced
  bool multi_label = false;
  std::optional<int> num_labels;           // multi_label only; else taken from the first batch
  std::vector<double> label_weights;       // one per label, >= 0; empty: none
  bool from_logits = false;
  std::string name = "auc";
  std::string dtype = "float32";
};

class AUCImpl : public Metric {
 public:
  explicit AUCImpl(const AUCOptions& options = {});
  std::string class_name() const override { return "AUC"; }

  // y_true and y_pred of one shape (after a trailing-1 squeeze/expand); multi_label wants rank 2
  // with a fixed number of labels. Throws ShapeError naming the metric otherwise.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  double result() const override;
  void reset_state() override;
  std::string direction() const override { return "max"; }
  json get_config() const override;  // Keras's keys; "thresholds" only when given
  // tp, fp, tn, fn, each of num_thresholds * labels values (labels = 1 unless multi_label).
  std::vector<double> state() const override;
  void set_state(const std::vector<double>& values) override;

  int num_thresholds() const { return static_cast<int>(thresholds_.size()); }
  const std::vector<double>& thresholds() const { return thresholds_; }
  // Counts of label `label` (0 unless multi_label).
  const ConfusionCounts& counts(int label = 0) const { return counts_.at(static_cast<size_t>(label)); }

  static std::shared_ptr<AUCImpl> from_config(const json& config);

 private:
  double curve_area(const ConfusionCounts& c) const;
  double interpolate_pr_auc(const ConfusionCounts& c) const;
  void build(int labels);

  AUCOptions options_;
  std::string curve_;    // "ROC" / "PR"
  std::string summation_;  // "interpolation" / "minoring" / "majoring"
  std::vector<double> thresholds_;
  bool evenly_ = true;
  std::vector<ConfusionCounts> counts_;  // one per label (one for the non-multi-label case)
};
std::shared_ptr<AUCImpl> AUC(const AUCOptions& options = {});

}  // namespace keras::metrics
