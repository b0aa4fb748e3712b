// Precision, Recall, AUC, F1Score/FBetaScore, MeanIoU and RootMeanSquaredError on hand-computed
// cases (several are Keras's documented examples): ties, empty classes, zero denominators (0,
// never NaN), sample weights, accumulation and reset, thresholds lists, top_k/class_id; a
// user-written stateful metric; and the metrics inside compile/fit/evaluate.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/ops.h"
#include "keras/keras.h"
#include "metrics/all_metrics.h"

using namespace keras;
namespace M = keras::metrics;
namespace L = keras::layers;
using json = nlohmann::json;

namespace {

Tensor F(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor F(const std::vector<float>& v) { return Tensor::from_vector(v); }

double once(const M::MetricPtr& m, const Tensor& y_true, const Tensor& y_pred, const Tensor& w = {}) {
  m->reset_state();
  m->update_state(y_true, y_pred, w);
  return m->result();
}

// A config survives serialize -> deserialize, and the copy computes the same value.
void expect_round_trip(const M::MetricPtr& m, const Tensor& y_true, const Tensor& y_pred) {
  M::MetricPtr copy = M::deserialize(M::serialize(*m));
  EXPECT_EQ(copy->class_name(), m->class_name());
  EXPECT_EQ(copy->get_config(), m->get_config());
  EXPECT_DOUBLE_EQ(once(copy, y_true, y_pred), once(m, y_true, y_pred));
}

}  // namespace

// ---- Precision / Recall ----

TEST(Precision, KerasExamplesAndZeroDenominator) {
  auto p = M::Precision();
  EXPECT_DOUBLE_EQ(once(p, F({0, 1, 1, 1}), F({1, 0, 1, 1})), 2.0 / 3);
  EXPECT_DOUBLE_EQ(once(p, F({0, 1, 1, 1}), F({1, 0, 1, 1}), F({0, 0, 1, 0})), 1.0);
  // Nothing predicted positive (0.5 is not above 0.5): 0, not NaN.
  EXPECT_DOUBLE_EQ(once(p, F({1, 1}), F({0.5f, 0.1f})), 0.0);
  EXPECT_DOUBLE_EQ(p->result(), 0.0);
  EXPECT_EQ(p->name(), "precision");
  EXPECT_EQ(p->direction(), "max");
}

TEST(Precision, TopKTiesGoToTheLowerIndex) {
  // Keras's documented example: the top 2 of four equal scores are the first two.
  EXPECT_DOUBLE_EQ(once(M::Precision({.top_k = 2}), F({0, 0, 1, 1}), F({1, 1, 1, 1})), 0.0);
  EXPECT_DOUBLE_EQ(once(M::Precision({.top_k = 4}), F({0, 0, 1, 1}), F({1, 1, 1, 1})), 0.5);
  // Per row of (batch, classes): row 0 keeps classes 2, 0; row 1 keeps classes 1, 2.
  Tensor yt = F({1, 0, 0, 0, 1, 0}, {2, 3}), yp = F({0.3f, 0.1f, 0.6f, 0.0f, 0.2f, 0.1f}, {2, 3});
  auto top2 = M::Precision({.top_k = 2});
  EXPECT_DOUBLE_EQ(once(top2, yt, yp), 0.5);  // tp: (0,0), (1,1); fp: (0,2), (1,2)
  EXPECT_DOUBLE_EQ(once(M::Recall({.top_k = 1}), yt, yp), 0.5);  // row 0 misses class 0
  // top_k with an explicit threshold: kept scores must also exceed it.
  EXPECT_DOUBLE_EQ(once(M::Precision({.thresholds = 0.25, .top_k = 2}), yt, yp), 0.5);  // (0,0) .3, (0,2) .6
}

TEST(Precision, ClassIdAndWeights) {
  Tensor yt = F({1, 0, 0, 0, 1, 0, 0, 1, 0}, {3, 3});
  Tensor yp = F({0.7f, 0.6f, 0.1f, 0.2f, 0.9f, 0.1f, 0.1f, 0.3f, 0.8f}, {3, 3});
  // Column 1: predictions .6 (label 0), .9 (1), .3 (1) -> tp 1, fp 1, fn 1.
  EXPECT_DOUBLE_EQ(once(M::Precision({.class_id = 1}), yt, yp), 0.5);
  EXPECT_DOUBLE_EQ(once(M::Recall({.class_id = 1}), yt, yp), 0.5);
  EXPECT_DOUBLE_EQ(once(M::Precision({.class_id = 1}), yt, yp, F({3, 1, 1})), 0.25);
  EXPECT_DOUBLE_EQ(once(M::Recall({.class_id = 1}), yt, yp, F({3, 1, 0}, {3, 1})), 1.0);
  // Per-element weights of y_pred's shape.
  Tensor w = F({1, 1, 1, 1, 2, 1, 1, 1, 1}, {3, 3});
  EXPECT_DOUBLE_EQ(once(M::Precision({.class_id = 1}), yt, yp, w), 2.0 / 3);
  // Class 2 has no positive label: recall 0, not NaN.
  EXPECT_DOUBLE_EQ(once(M::Recall({.class_id = 2}), yt, yp), 0.0);
  EXPECT_THROW(once(M::Precision({.class_id = 3}), yt, yp), ValueError);
  EXPECT_THROW(once(M::Precision(), yt, yp, F({1, 1}, {2})), ShapeError);
  EXPECT_THROW(once(M::Precision(), F({1, 0}), yp), ShapeError);
}

TEST(Precision, ThresholdListGivesAVector) {
  auto p = M::Precision({.thresholds = {0.3, 0.7}});
  auto r = M::Recall({.thresholds = {0.3, 0.7}});
  Tensor yt = F({1, 0, 1, 0}), yp = F({0.2f, 0.4f, 0.8f, 0.7f});
  once(p, yt, yp);
  once(r, yt, yp);
  // t = .3: predicted {.4, .8, .7}, tp 1 -> 1/3; t = .7: {.8} only (.7 is not above .7) -> 1.
  ASSERT_EQ(p->results().size(), 2u);
  EXPECT_DOUBLE_EQ(p->results()[0], 1.0 / 3);
  EXPECT_DOUBLE_EQ(p->results()[1], 1.0);
  EXPECT_DOUBLE_EQ(r->results()[0], 0.5);
  EXPECT_DOUBLE_EQ(r->results()[1], 0.5);
  Tensor v = p->result_tensor();
  ASSERT_EQ(v.shape(), (Shape{2}));
  EXPECT_NEAR(v.to_vector<float>()[0], 1.0 / 3, 1e-7);
  EXPECT_DOUBLE_EQ(p->result(), (1.0 / 3 + 1.0) / 2);
  // A list of one is a scalar result, as Keras's result[0].
  auto one = M::Precision({.thresholds = {0.3}});
  once(one, yt, yp);
  EXPECT_EQ(one->result_tensor().rank(), 0);
  EXPECT_THROW(M::Precision({.thresholds = {0.5, 1.5}}), ValueError);
}

TEST(Precision, AccumulatesResetsAndRestores) {
  auto r = M::Recall();
  r->update_state(F({1, 1}), F({0.9f, 0.1f}));    // tp 1, fn 1
  r->update_state(F({1, 0}), F({0.8f, 0.9f}));    // tp 1
  r->update_state(F({1}), F({0.2f}), F({2}));     // fn 2
  EXPECT_DOUBLE_EQ(r->result(), 2.0 / 5);
  std::vector<double> st = r->state();
  r->reset_state();
  EXPECT_DOUBLE_EQ(r->result(), 0.0);
  r->set_state(st);
  EXPECT_DOUBLE_EQ(r->result(), 2.0 / 5);
  EXPECT_THROW(r->set_state({1, 2}), ValueError);
}

TEST(Precision, ConfigAndRegistry) {
  auto p = M::Precision({.thresholds = 0.4, .class_id = 2, .name = "p2"});
  json c = p->get_config();
  EXPECT_EQ(c["thresholds"], 0.4);
  EXPECT_TRUE(c["top_k"].is_null());
  EXPECT_EQ(c["class_id"], 2);
  EXPECT_EQ(c["name"], "p2");
  EXPECT_TRUE(M::Recall()->get_config()["thresholds"].is_null());
  EXPECT_EQ(M::Recall({.thresholds = {0.2, 0.6}})->get_config()["thresholds"], json({0.2, 0.6}));
  Tensor yt = F({1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3}), yp = F({0.7f, 0.6f, 0.1f, 0.2f, 0.9f, 0.5f, 0.1f, 0.3f, 0.8f}, {3, 3});
  expect_round_trip(p, yt, yp);
  expect_round_trip(M::Recall({.thresholds = {0.2, 0.6}, .top_k = 2}), yt, yp);
  EXPECT_EQ(M::get("precision")->class_name(), "Precision");
  EXPECT_EQ(M::get("recall")->class_name(), "Recall");
}

// ---- AUC ----

TEST(AUC, KerasExampleRocAndSummationMethods) {
  Tensor yt = F({0, 0, 1, 1}), yp = F({0, 0.5f, 0.3f, 0.9f});
  // Thresholds {-eps, .5, 1+eps}: (fpr, recall) = (1, 1), (0, .5), (0, 0).
  EXPECT_DOUBLE_EQ(once(M::AUC({.num_thresholds = 3}), yt, yp), 0.75);
  EXPECT_DOUBLE_EQ(once(M::AUC({.num_thresholds = 3, .summation_method = "minoring"}), yt, yp), 0.5);
  EXPECT_DOUBLE_EQ(once(M::AUC({.num_thresholds = 3, .summation_method = "majoring"}), yt, yp), 1.0);
  // The same thresholds given as a list (counted by comparison, not buckets).
  auto listed = M::AUC({.thresholds = {0.5}});
  EXPECT_DOUBLE_EQ(once(listed, yt, yp), 0.75);
  EXPECT_EQ(listed->num_thresholds(), 3);
  // from_logits: sigmoid(0) = .5 exactly, so the same counts.
  Tensor logits = F({-5, 0, std::log(0.3f / 0.7f), std::log(9.0f)});
  EXPECT_DOUBLE_EQ(once(M::AUC({.num_thresholds = 3, .from_logits = true}), yt, logits), 0.75);
  // The weight 0 removes the positive ranked below a negative.
  EXPECT_DOUBLE_EQ(once(M::AUC({.num_thresholds = 3}), yt, yp, F({1, 1, 0, 1})), 1.0);
}

TEST(AUC, RocMatchesPairwiseRankingAndTies) {
  // With every score in its own bucket the ROC area is the fraction of correctly ordered
  // (positive, negative) pairs: here 8 of 9.
  Tensor yt = F({0, 1, 0, 1, 1, 0}), yp = F({0.1f, 0.35f, 0.4f, 0.8f, 0.65f, 0.2f});
  EXPECT_NEAR(once(M::AUC(), yt, yp), 8.0 / 9, 1e-12);
  // A positive and a negative with the same score share the credit.
  EXPECT_NEAR(once(M::AUC(), F({0, 1}), F({0.5f, 0.5f})), 0.5, 1e-12);
  // Only one class seen: the missing rate is 0 by divide_no_nan, never NaN.
  double one_class = once(M::AUC(), F({1, 1}), F({0.2f, 0.7f}));
  EXPECT_FALSE(std::isnan(one_class));
  EXPECT_DOUBLE_EQ(one_class, 0.0);
  EXPECT_DOUBLE_EQ(M::AUC()->result(), 0.0);
  // Batches accumulate: split in two gives the same area.
  auto m = M::AUC();
  m->update_state(F({0, 1, 0}), F({0.1f, 0.35f, 0.4f}));
  m->update_state(F({1, 1, 0}), F({0.8f, 0.65f, 0.2f}));
  EXPECT_NEAR(m->result(), 8.0 / 9, 1e-12);
  m->reset_state();
  EXPECT_DOUBLE_EQ(m->result(), 0.0);
}

TEST(AUC, PrecisionRecallCurve) {
  Tensor yt = F({0, 0, 1, 1}), yp = F({0, 0.5f, 0.3f, 0.9f});
  // tp = (2, 1, 0), fp = (2, 0, 0), fn = (0, 1, 2). Davis-Goadrich interpolation:
  // segment 0: slope 1/3, intercept 2/3, p ratio 4 -> (1/3)(1 + (2/3) ln 4) / 2; segment 1: 1/2.
  const double expected = (1.0 + 2.0 / 3 * std::log(4.0)) / 6 + 0.5;
  EXPECT_NEAR(once(M::AUC({.num_thresholds = 3, .curve = "PR"}), yt, yp), expected, 1e-12);
  // precision = (.5, 1, 0/0 -> 0), recall = (1, .5, 0).
  EXPECT_DOUBLE_EQ(once(M::AUC({.num_thresholds = 3, .curve = "pr", .summation_method = "minoring"}), yt, yp), 0.25);
  EXPECT_DOUBLE_EQ(once(M::AUC({.num_thresholds = 3, .curve = "PR", .summation_method = "majoring"}), yt, yp), 1.0);
}

TEST(AUC, MultiLabelAndLabelWeights) {
  Tensor yt = F({0, 1, 1, 0, 1, 0, 0, 1}, {4, 2});
  Tensor yp = F({0.1f, 0.2f, 0.9f, 0.3f, 0.6f, 0.8f, 0.4f, 0.7f}, {4, 2});
  // Label 0 is perfectly ranked (1); label 1 orders 1 of 4 pairs (.25).
  EXPECT_NEAR(once(M::AUC({.multi_label = true}), yt, yp), 0.625, 1e-12);
  EXPECT_NEAR(once(M::AUC({.multi_label = true, .label_weights = {3, 1}}), yt, yp), (3 * 1.0 + 0.25) / 4, 1e-12);
  // Without multi_label all 8 elements form one curve: 11 of 16 pairs.
  EXPECT_NEAR(once(M::AUC(), yt, yp), 11.0 / 16, 1e-12);
  auto ml = M::AUC({.multi_label = true});
  once(ml, yt, yp);
  EXPECT_EQ(ml->get_config()["num_labels"], 2);
  EXPECT_THROW(ml->update_state(F({1, 0, 1}, {1, 3}), F({1, 0, 1}, {1, 3})), ShapeError);
}

TEST(AUC, ConfigValidationAndRegistry) {
  EXPECT_THROW(M::AUC({.num_thresholds = 1}), ValueError);
  EXPECT_THROW(M::AUC({.curve = "DET"}), ValueError);
  EXPECT_THROW(M::AUC({.summation_method = "trapezoid"}), ValueError);
  auto a = M::AUC({.curve = "pr"});
  json c = a->get_config();
  EXPECT_EQ(c["num_thresholds"], 200);
  EXPECT_EQ(c["curve"], "PR");
  EXPECT_EQ(c["summation_method"], "interpolation");
  EXPECT_FALSE(c.contains("thresholds"));
  EXPECT_EQ(c["name"], "auc");
  EXPECT_EQ(M::AUC({.thresholds = {0.7, 0.2}})->get_config()["thresholds"], json({0.2, 0.7}));
  Tensor yt = F({0, 1, 0, 1, 1, 0}), yp = F({0.1f, 0.35f, 0.4f, 0.8f, 0.65f, 0.2f});
  expect_round_trip(a, yt, yp);
  expect_round_trip(M::AUC({.thresholds = {0.3, 0.5}, .from_logits = true}), yt, yp);
  EXPECT_EQ(M::get("auc")->class_name(), "AUC");
  EXPECT_EQ(a->direction(), "max");
}

// ---- F1Score / FBetaScore ----

namespace {
// Labels: row 0 class 0, row 1 class 1, row 2 class 2, row 3 class 1. Predictions without a
// threshold: row 0 -> {0}; row 1 ties -> {0, 1}; row 2 -> {1}; row 3 all zero -> {}.
//   class 0: tp 1, fp 1, fn 0 (support 1) -> F1 2/3
//   class 1: tp 1, fp 1, fn 1 (support 2) -> F1 1/2
//   class 2: tp 0, fp 0, fn 1 (support 1) -> F1 0
Tensor f_true() { return F({1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0}, {4, 3}); }
Tensor f_pred() { return F({0.6f, 0.2f, 0.2f, 0.4f, 0.4f, 0.2f, 0.1f, 0.7f, 0.2f, 0, 0, 0}, {4, 3}); }
}  // namespace

TEST(F1Score, AveragesOnHandComputedCounts) {
  auto none = M::F1Score();
  once(none, f_true(), f_pred());
  std::vector<double> per = none->per_class();
  ASSERT_EQ(per.size(), 3u);
  EXPECT_NEAR(per[0], 2.0 / 3, 1e-6);
  EXPECT_NEAR(per[1], 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(per[2], 0.0);  // an empty prediction column: 0, not NaN
  EXPECT_EQ(none->result_tensor().shape(), (Shape{3}));
  EXPECT_NEAR(once(M::F1Score({.average = "macro"}), f_true(), f_pred()), (2.0 / 3 + 0.5) / 3, 1e-6);
  EXPECT_NEAR(once(M::F1Score({.average = "weighted"}), f_true(), f_pred()), (2.0 / 3 * 1 + 0.5 * 2) / 4, 1e-6);
  EXPECT_NEAR(once(M::F1Score({.average = "micro"}), f_true(), f_pred()), 0.5, 1e-6);  // tp 2, fp 2, fn 2
  EXPECT_EQ(M::F1Score({.average = "micro"})->result_tensor().rank(), 0);
}

TEST(F1Score, ThresholdWeightsAndAccumulation) {
  // p > .5: row 0 -> {0}, row 2 -> {1}: class 0 F1 1, class 1 (tp 0, fp 1, fn 2) 0, class 2 0.
  EXPECT_NEAR(once(M::F1Score({.average = "macro", .threshold = 0.5}), f_true(), f_pred()), 1.0 / 3, 1e-6);
  // Weights 1, 2, 0, 1: class 0 tp 1 fp 2 -> P 1/3, R 1 -> F1 1/2; class 1 tp 2 fn 1 -> P 1,
  // R 2/3 -> F1 4/5; class 2 weighs 0 -> 0.
  EXPECT_NEAR(once(M::F1Score({.average = "macro"}), f_true(), f_pred(), F({1, 2, 0, 1})), (0.5 + 0.8) / 3, 1e-6);
  EXPECT_NEAR(once(M::F1Score({.average = "macro"}), f_true(), f_pred(), F({1, 2, 0, 1}, {4, 1})), (0.5 + 0.8) / 3, 1e-6);
  // Two batches give the counts of one.
  auto m = M::F1Score({.average = "macro"});
  m->update_state(f_true().slice_batch(0, 2), f_pred().slice_batch(0, 2));
  m->update_state(f_true().slice_batch(2, 4), f_pred().slice_batch(2, 4));
  EXPECT_NEAR(m->result(), (2.0 / 3 + 0.5) / 3, 1e-6);
  std::vector<double> st = m->state();
  EXPECT_EQ(st.size(), 12u);
  m->reset_state();
  EXPECT_DOUBLE_EQ(m->result(), 0.0);
  m->set_state(st);
  EXPECT_NEAR(m->result(), (2.0 / 3 + 0.5) / 3, 1e-6);
  EXPECT_THROW(m->update_state(F({1, 0}, {1, 2}), F({1, 0}, {1, 2})), ShapeError);  // classes fixed
  // Nothing seen / all zero: 0.
  EXPECT_DOUBLE_EQ(M::F1Score({.average = "micro"})->result(), 0.0);
  EXPECT_DOUBLE_EQ(once(M::F1Score({.average = "macro"}), F({0, 0}, {1, 2}), F({0, 0}, {1, 2})), 0.0);
}

TEST(FBetaScore, BetaConfigAndValidation) {
  // Class 0: P 1/2, R 1 -> (1 + 4) (1/2) / (4 (1/2) + 1) = 5/6.
  auto fb = M::FBetaScore({.beta = 2.0});
  once(fb, f_true(), f_pred());
  EXPECT_NEAR(fb->per_class()[0], 5.0 / 6, 1e-6);
  EXPECT_EQ(fb->name(), "fbeta_score");
  EXPECT_EQ(fb->get_config()["beta"], 2.0);
  EXPECT_TRUE(fb->get_config()["average"].is_null());
  auto f1 = M::F1Score({.average = "weighted", .threshold = 0.3});
  json c = f1->get_config();
  EXPECT_FALSE(c.contains("beta"));
  EXPECT_EQ(c["average"], "weighted");
  EXPECT_EQ(c["threshold"], 0.3);
  EXPECT_EQ(c["name"], "f1_score");
  expect_round_trip(f1, f_true(), f_pred());
  expect_round_trip(M::FBetaScore({.average = "micro", .beta = 0.5}), f_true(), f_pred());
  EXPECT_THROW(M::F1Score({.average = "samples"}), ValueError);
  EXPECT_THROW(M::FBetaScore({.beta = 0.0}), ValueError);
  EXPECT_THROW(M::F1Score({.threshold = 1.5}), ValueError);
  EXPECT_THROW(M::F1Score({.threshold = 0.0}), ValueError);
  EXPECT_THROW(once(M::F1Score(), F({1, 0}), F({1, 0})), ShapeError);  // rank 1
  EXPECT_EQ(M::get("f1_score")->class_name(), "F1Score");
  EXPECT_EQ(M::get("fbeta_score")->class_name(), "FBetaScore");
  EXPECT_EQ(f1->direction(), "max");
}

// ---- MeanIoU ----

TEST(MeanIoU, KerasExamplesEmptyClassAndIgnore) {
  auto m = M::MeanIoU({.num_classes = 2});
  EXPECT_NEAR(once(m, F({0, 0, 1, 1}), F({0, 1, 0, 1})), 1.0 / 3, 1e-6);
  EXPECT_NEAR(once(m, F({0, 0, 1, 1}), F({0, 1, 0, 1}), F({0.3f, 0.2f, 0.5f, 0.1f})), 0.2125, 1e-6);
  EXPECT_EQ(m->name(), "mean_io_u");
  // Class 2 never appears: it does not count in the mean.
  EXPECT_NEAR(once(M::MeanIoU({.num_classes = 3}), F({0, 0, 1, 1}), F({0, 1, 0, 1})), 1.0 / 3, 1e-6);
  EXPECT_DOUBLE_EQ(M::MeanIoU({.num_classes = 3})->result(), 0.0);
  // ignore_class drops the void label entirely (even out of range).
  EXPECT_NEAR(once(M::MeanIoU({.num_classes = 2, .ignore_class = 255}), F({0, 1, 255}), F({0, 1, 0})), 1.0, 1e-6);
  EXPECT_THROW(once(M::MeanIoU({.num_classes = 2}), F({0, 2}), F({0, 1})), IndexError);
  // Scores instead of ids: argmax over the last axis; ids of shape (2, 2) are flattened.
  auto dense = M::MeanIoU({.num_classes = 2, .sparse_y_pred = false});
  EXPECT_NEAR(once(dense, F({0, 0, 1, 1}, {2, 2}), F({0.9f, 0.1f, 0.2f, 0.8f, 0.7f, 0.3f, 0.4f, 0.6f}, {2, 2, 2})), 1.0 / 3, 1e-6);
  // Accumulation over batches.
  m->reset_state();
  m->update_state(F({0, 0}), F({0, 1}));
  m->update_state(F({1, 1}), F({0, 1}));
  EXPECT_NEAR(m->result(), 1.0 / 3, 1e-6);
  expect_round_trip(M::MeanIoU({.num_classes = 3, .ignore_class = 2}), F({0, 2, 1}), F({0, 1, 1}));
  EXPECT_EQ(M::get("mean_io_u")->class_name(), "MeanIoU");
}

// ---- regression ----

TEST(RegressionMetrics, RootMeanSquaredErrorAndTheMeanWrappers) {
  Tensor yt = F({0, 1, 0, 0}, {2, 2}), yp = F({1, 1, 0, 0}, {2, 2});
  auto rmse = M::RootMeanSquaredError();
  EXPECT_DOUBLE_EQ(once(rmse, yt, yp), 0.5);                              // Keras's example
  EXPECT_NEAR(once(rmse, yt, yp, F({1, 0})), std::sqrt(0.5), 1e-12);      // with sample_weight
  // Root of the accumulated mean, not a mean of roots: errors^2 .5 and 0 -> sqrt(.25).
  rmse->reset_state();
  rmse->update_state(yt.slice_batch(0, 1), yp.slice_batch(0, 1));
  rmse->update_state(yt.slice_batch(1, 2), yp.slice_batch(1, 2));
  EXPECT_DOUBLE_EQ(rmse->result(), 0.5);
  EXPECT_EQ(rmse->direction(), "min");
  EXPECT_EQ(rmse->name(), "root_mean_squared_error");
  EXPECT_THROW(once(rmse, F({1, 2, 3}), F({1, 2})), ShapeError);
  EXPECT_DOUBLE_EQ(once(M::get("mse"), yt, yp), 0.25);
  EXPECT_DOUBLE_EQ(once(M::get("mae"), yt, yp), 0.25);
  EXPECT_EQ(M::get("root_mean_squared_error")->class_name(), "RootMeanSquaredError");
  expect_round_trip(M::RootMeanSquaredError({.name = "rmse"}), yt, yp);
}

// ---- a user-written stateful metric ----

namespace {
// Counts the samples whose largest score is above `margin` (a stateful metric in a few lines).
class ConfidentCount : public M::Metric {
 public:
  explicit ConfidentCount(double margin = 0.9, std::string name = "confident_count")
      : Metric(std::move(name)), margin_(margin) {}
  std::string class_name() const override { return "ConfidentCount"; }
  void update_state(const Tensor&, const Tensor& y_pred, const Tensor& sample_weight = {}) override {
    M::HostArray p = M::to_host(y_pred);
    const int64_t classes = p.shape.back();
    std::vector<double> w = sample_weight.defined() ? M::to_host(sample_weight).data : std::vector<double>{};
    for (int64_t i = 0; i * classes < p.size(); ++i)
      if (p.data[static_cast<size_t>(M::first_argmax(p.data.data() + i * classes, classes) + i * classes)] > margin_)
        count_ += w.empty() ? 1.0 : w[static_cast<size_t>(i)];
  }
  double result() const override { return count_; }
  void reset_state() override { count_ = 0; }
  std::vector<double> state() const override { return {count_}; }
  json get_config() const override {
    json c = Metric::get_config();
    c["margin"] = margin_;
    return c;
  }

 private:
  double margin_;
  double count_ = 0;
};

const bool confident_registered = [] {
  M::register_metric("ConfidentCount",
                     [](const json& c) -> M::MetricPtr {
                       return std::make_shared<ConfidentCount>(c.value("margin", 0.9), c.value("name", "confident_count"));
                     },
                     {"confident_count"});
  return true;
}();

std::pair<Tensor, Tensor> toy_one_hot(int64_t n, uint64_t seed) {
  Tensor x = random::normal({n, 2}, 0, 1, seed);
  std::vector<float> y(static_cast<size_t>(2 * n), 0.0f);
  auto xv = x.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(2 * i + (xv[2 * i] + xv[2 * i + 1] > 0 ? 1 : 0))] = 1.0f;
  return {x, F(y, {n, 2})};
}
}  // namespace

TEST(CustomMetric, StatefulSubclassByObjectAndByName) {
  ASSERT_TRUE(confident_registered);
  auto m = M::get("confident_count");
  m->update_state(Tensor{}, F({0.95f, 0.05f, 0.6f, 0.4f}, {2, 2}));
  m->update_state(Tensor{}, F({0.01f, 0.99f}, {1, 2}), F({3}));
  EXPECT_DOUBLE_EQ(m->result(), 4.0);
  M::MetricPtr copy = M::deserialize(M::serialize(ConfidentCount(0.5, "c5")));
  EXPECT_EQ(copy->name(), "c5");
  EXPECT_EQ(copy->get_config()["margin"], 0.5);
}

TEST(CustomMetric, BuiltInsAndCustomInCompileFitEvaluate) {
  set_random_seed(3);
  auto [x, y] = toy_one_hot(256, 11);
  auto model = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = 8, .activation = "relu"}), L::Dense({.units = 2, .activation = "softmax"})});
  auto f1 = M::F1Score({.average = "macro"});
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}),
                  .loss = "categorical_crossentropy",
                  .metrics = {f1, "precision", "auc", "confident_count", std::make_shared<ConfidentCount>(0.99, "very_sure")}});
  History h = model->fit(x, y, {.batch_size = 32, .epochs = 8, .verbose = 0});
  for (const char* key : {"f1_score", "precision", "auc", "confident_count", "very_sure"})
    ASSERT_EQ(h[key].size(), 8u) << key;
  EXPECT_GT(h["f1_score"].back(), 0.85);
  EXPECT_GT(h["auc"].back(), 0.9);
  // evaluate in one batch equals the metrics computed directly on predict's output.
  Logs logs = model->evaluate(x, y, {.batch_size = 256, .verbose = 0});
  Tensor probs = model->predict(x, {.batch_size = 256});
  EXPECT_NEAR(logs.at("f1_score"), once(M::F1Score({.average = "macro"}), y, probs), 1e-9);
  EXPECT_NEAR(logs.at("auc"), once(M::AUC(), y, probs), 1e-9);
  EXPECT_NEAR(logs.at("precision"), once(M::Precision(), y, probs), 1e-9);
  EXPECT_LE(logs.at("very_sure"), logs.at("confident_count"));
}
