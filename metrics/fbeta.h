// FBetaScore and F1Score (keras.metrics, Keras 3 semantics; formats spec section 8).
//
// Inputs (batch, num_classes), y_true one-hot or multi-hot; num_classes is fixed by the first
// batch. A prediction counts as 1 where
//  - threshold unset: it equals its row's maximum and |p| > 1e-9 (ties all count; an all-zero
//    row predicts nothing);
//  - threshold t in (0, 1]: p > t.
// Per class (one global count for average "micro"), weighted by the per-sample weight:
// tp += y*p, fp += (1-y)*p, fn += y*(1-p), support += y. Then with eps = 1e-7
//   P = tp/(tp+fp+eps), R = tp/(tp+fn+eps), F = (1+b^2) * P*R / (b^2*P + R + eps)
// and average None -> per-class vector, "micro" -> F of the global counts, "macro" -> plain
// mean, "weighted" -> mean weighted by support / (sum(support) + eps). Empty classes give 0,
// never NaN. direction "max".
#pragma once
#include <optional>

#include "metrics/metric.h"

namespace keras::metrics {

struct FBetaScoreOptions {
  std::optional<std::string> average;  // none, "micro", "macro", "weighted" (ValueError otherwise)
  double beta = 1.0;                   // > 0
  std::optional<double> threshold;     // in (0, 1]
  std::string name = "fbeta_score";
  std::string dtype = "float32";
};

class FBetaScoreImpl : public Metric {
 public:
  explicit FBetaScoreImpl(const FBetaScoreOptions& options = {});
  std::string class_name() const override { return "FBetaScore"; }

  // y_true, y_pred: (batch, C) of one shape, C equal across batches (ShapeError otherwise);
  // sample_weight (batch,) or (batch, 1).
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  // The averaged score; with average none, the mean of the per-class scores (logs hold one
  // number; result_tensor() and per_class() hold the vector). 0 before any update.
  double result() const override;
  Tensor result_tensor() const override;
  void reset_state() override;
  std::string direction() const override { return "max"; }
  json get_config() const override;  // + average, beta, threshold
  // tp, fp, fn, support (C values each; 1 each for "micro").
  std::vector<double> state() const override;
  void set_state(const std::vector<double>& values) override;

  // The score per class (one value for "micro"), before averaging.
  std::vector<double> per_class() const;
  const std::optional<std::string>& average() const { return options_.average; }

 protected:
  FBetaScoreImpl(const FBetaScoreOptions& options, const std::string& cls);

 private:
  FBetaScoreOptions options_;
  int64_t classes_ = -1;  // fixed by the first batch
  std::vector<double> tp_, fp_, fn_, support_;
};
std::shared_ptr<FBetaScoreImpl> FBetaScore(const FBetaScoreOptions& options = {});

struct F1ScoreOptions {
  std::optional<std::string> average;
  std::optional<double> threshold;
  std::string name = "f1_score";
  std::string dtype = "float32";
};

// FBetaScore with beta = 1; its config has no "beta" key, as Keras's.
class F1ScoreImpl : public FBetaScoreImpl {
 public:
  explicit F1ScoreImpl(const F1ScoreOptions& options = {});
  std::string class_name() const override { return "F1Score"; }
  json get_config() const override;
};
std::shared_ptr<F1ScoreImpl> F1Score(const F1ScoreOptions& options = {});

}  // namespace keras::metrics
