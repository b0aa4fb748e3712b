// Thresholded confusion counts (Keras's metrics_utils.update_confusion_matrix_variables) and the
// metrics built on them: Precision and Recall (keras.metrics). AUC (metrics/auc.h) shares the
// counting.
//
// Keras's rules, batch by batch, all on the host in double:
//  - y_true and y_pred get the squeeze/expand of a trailing 1, then must have one shape;
//    y_pred is rounded to float32 (the metric's dtype) and a label is positive iff non-zero;
//  - top_k keeps, per row of the last axis, the k largest predictions (ties to the lower index,
//    as top_k does) and sets the others to -1e10; class_id then keeps only that column;
//  - an element is predicted positive at threshold t iff y_pred > t (strictly);
//  - sample_weight (optional) broadcasts to y_pred: (batch,), (batch, 1) or y_pred's shape;
//  - every element of every sample counts once (multi-class inputs are flattened).
// Counts accumulate over update_state calls until reset_state.
#pragma once
#include <optional>
#include <vector>

#include "metrics/host_array.h"
#include "metrics/metric.h"

namespace keras::metrics {

// Keras's `thresholds` argument: None (empty), one value, or a list. A scalar and a list of one
// both give a scalar result; a longer list gives one value per threshold. The form given is
// kept for get_config.
struct Thresholds {
  Thresholds() = default;
  Thresholds(double v) : values{v}, scalar(true) {}  // NOLINT: `.thresholds = 0.7`
  Thresholds(std::initializer_list<double> v) : values(v) {}
  Thresholds(std::vector<double> v) : values(std::move(v)) {}

  std::vector<double> values;
  bool scalar = false;

  bool none() const { return values.empty(); }
  json to_json() const;  // null, a number, or a list
  static Thresholds from_json(const json& j);
};

// Keras's NEG_INF, the value top_k filtering gives to the predictions it drops.
inline constexpr double kNegInf = -1e10;

// True/false positives/negatives, one slot per threshold.
struct ConfusionCounts {
  std::vector<double> tp, fp, tn, fn;
  void resize(size_t n);
  void reset();
  size_t size() const { return tp.size(); }
};

// Host inputs after Keras's preparation (squeeze/expand, float32 rounding, top_k, class_id,
// sample_weight broadcast): three arrays of one shape; `label` holds 1/0.
struct ConfusionInputs {
  HostArray pred, label, weight;
};

// Prepares one batch. `top_k` >= 1 and 0 <= `class_id` < last extent, else ValueError;
// mismatched shapes -> ShapeError naming `where`.
ConfusionInputs prepare_confusion_inputs(const std::string& where, const Tensor& y_true, const Tensor& y_pred,
                                         const Tensor& sample_weight, std::optional<int> top_k = std::nullopt,
                                         std::optional<int> class_id = std::nullopt);

// Adds elements begin, begin + stride, ... (< size) of `in` to `counts` at `thresholds` (already
// float32-rounded, ascending when `evenly`). `evenly` (thresholds i/(n-1), possibly with the -eps and
// 1+eps end points) uses Keras's bucket method, O(elements + thresholds); otherwise every
// threshold is compared. `counts` must have thresholds.size() slots.
void accumulate_confusion(ConfusionCounts& counts, const ConfusionInputs& in, const std::vector<double>& thresholds,
                          bool evenly, int64_t begin = 0, int64_t stride = 1);

// Validated thresholds as float32 values: each in [0, 1] (ValueError naming `where` otherwise);
// `fallback` when none are given.
std::vector<double> parse_thresholds(const std::string& where, const Thresholds& given, double fallback);

// tp / (tp + other) elementwise, 0 where the denominator is 0 (Keras's divide_no_nan).
std::vector<double> divide_no_nan(const std::vector<double>& num, const std::vector<double>& other);

struct PrecisionRecallOptions {
  Thresholds thresholds;         // None: 0.5, or -1e10 (every top-k prediction) with top_k
  std::optional<int> top_k;      // >= 1
  std::optional<int> class_id;   // a column of the last axis
  std::string name;              // empty: "precision" / "recall"
  std::string dtype = "float32";
};

// Shared body of Precision and Recall: confusion counts at the thresholds.
class ThresholdedRatio : public Metric {
 public:
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  // The first threshold's value for one threshold; the mean of the per-threshold values for a
  // list (logs hold one number; result_tensor() holds the vector).
  double result() const override;
  Tensor result_tensor() const override;
  void reset_state() override;
  std::string direction() const override { return "max"; }
  json get_config() const override;  // + thresholds, top_k, class_id
  std::vector<double> state() const override;
  void set_state(const std::vector<double>& values) override;

  // One value per threshold.
  std::vector<double> results() const;
  const std::vector<double>& thresholds() const { return thresholds_; }
  const ConfusionCounts& counts() const { return counts_; }

 protected:
  ThresholdedRatio(const PrecisionRecallOptions& o, const std::string& default_name, const std::string& cls);
  // tp + fp for precision, tp + fn for recall.
  virtual const std::vector<double>& other() const = 0;

  ConfusionCounts counts_;

 private:
  PrecisionRecallOptions options_;
  std::vector<double> thresholds_;
};

// keras.metrics.Precision: tp / (tp + fp), 0 when nothing was predicted positive.
class PrecisionImpl : public ThresholdedRatio {
 public:
  explicit PrecisionImpl(const PrecisionRecallOptions& o = {}) : ThresholdedRatio(o, "precision", "Precision") {}
  std::string class_name() const override { return "Precision"; }

 protected:
  const std::vector<double>& other() const override { return counts_.fp; }
};
std::shared_ptr<PrecisionImpl> Precision(const PrecisionRecallOptions& options = {});

// keras.metrics.Recall: tp / (tp + fn), 0 when there was no positive label.
class RecallImpl : public ThresholdedRatio {
 public:
  explicit RecallImpl(const PrecisionRecallOptions& o = {}) : ThresholdedRatio(o, "recall", "Recall") {}
  std::string class_name() const override { return "Recall"; }

 protected:
  const std::vector<double>& other() const override { return counts_.fn; }
};
std::shared_ptr<RecallImpl> Recall(const PrecisionRecallOptions& options = {});

// The options of a Precision/Recall config (missing keys keep the defaults).
PrecisionRecallOptions precision_recall_options_from_config(const json& config);

}  // namespace keras::metrics
