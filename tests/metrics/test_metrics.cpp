// Metrics on hand-computed cases (several are Keras's documented examples): argmax ties, sample
// weights, accumulation over batches, reset, the registry and compile's "accuracy" resolution.
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "losses/losses.h"
#include "metrics/metrics.h"

using namespace keras;
namespace M = keras::metrics;
using json = nlohmann::json;

namespace {

Tensor F(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor I64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor I32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, s); }

double once(const M::MetricPtr& m, const Tensor& y_true, const Tensor& y_pred, const Tensor& w = {}) {
  m->reset_state();
  m->update_state(y_true, y_pred, w);
  return m->result();
}

}  // namespace

TEST(Metrics, AccuracyExactMatch) {
  Tensor yt = F({1, 2, 3, 4}, {4, 1}), yp = F({0, 2, 3, 4}, {4, 1});
  auto acc = M::Accuracy();
  EXPECT_DOUBLE_EQ(once(acc, yt, yp), 0.75);
  EXPECT_DOUBLE_EQ(once(acc, yt, yp, F({1, 1, 0, 0}, {4})), 0.5);
  // y_true is converted to y_pred's dtype first: float64 1/3 equals float32 1/3.
  Tensor third64 = Tensor::from_vector(std::vector<double>{1.0 / 3}, {1});
  EXPECT_DOUBLE_EQ(once(acc, third64, F({1.0f / 3}, {1})), 1.0);
  EXPECT_EQ(acc->direction(), "max");
}

TEST(Metrics, BinaryAccuracyThresholdAndPerSampleMean) {
  Tensor yt = F({1, 1, 0, 0}, {4, 1}), yp = F({0.98f, 1, 0, 0.6f}, {4, 1});
  EXPECT_DOUBLE_EQ(once(M::BinaryAccuracy(), yt, yp), 0.75);
  EXPECT_DOUBLE_EQ(once(M::BinaryAccuracy(), yt, yp, F({1, 0, 0, 1}, {4})), 0.5);
  EXPECT_DOUBLE_EQ(once(M::BinaryAccuracy({.threshold = 0.7}), yt, yp), 1.0);
  // Exactly at the threshold is not above it.
  EXPECT_DOUBLE_EQ(once(M::BinaryAccuracy(), F({1}, {1, 1}), F({0.5f}, {1, 1})), 0.0);
  // Two outputs per sample: each sample's matches are averaged, then samples are weighted.
  Tensor yt2 = F({1, 0, 0, 0}, {2, 2}), yp2 = F({0.9f, 0.8f, 0.1f, 0.2f}, {2, 2});
  EXPECT_DOUBLE_EQ(once(M::BinaryAccuracy(), yt2, yp2), 0.75);
  EXPECT_DOUBLE_EQ(once(M::BinaryAccuracy(), yt2, yp2, F({1, 3}, {2})), 3.5 / 4);
  EXPECT_EQ(M::BinaryAccuracy({.threshold = 0.3})->get_config()["threshold"], 0.3);
}

TEST(Metrics, CategoricalAccuracyAndTies) {
  Tensor yt = F({0, 0, 1, 0, 1, 0}, {2, 3}), yp = F({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  EXPECT_DOUBLE_EQ(once(M::CategoricalAccuracy(), yt, yp), 0.5);
  EXPECT_NEAR(once(M::CategoricalAccuracy(), yt, yp, F({0.7f, 0.3f}, {2})), 0.3, 1e-7);
  // A tie in y_pred goes to the first maximum.
  Tensor tie = F({0.5f, 0.5f, 0}, {1, 3});
  EXPECT_DOUBLE_EQ(once(M::CategoricalAccuracy(), F({1, 0, 0}, {1, 3}), tie), 1.0);
  EXPECT_DOUBLE_EQ(once(M::CategoricalAccuracy(), F({0, 1, 0}, {1, 3}), tie), 0.0);
  EXPECT_THROW(once(M::CategoricalAccuracy(), F({0, 1}, {1, 2}), tie), ShapeError);
}

TEST(Metrics, SparseCategoricalAccuracyLabelsAndTies) {
  Tensor yp = F({0.1f, 0.6f, 0.3f, 0.05f, 0.95f, 0}, {2, 3});
  auto m = M::SparseCategoricalAccuracy();
  EXPECT_DOUBLE_EQ(once(m, F({2, 1}, {2, 1}), yp), 0.5);
  EXPECT_NEAR(once(m, F({2, 1}, {2, 1}), yp, F({0.7f, 0.3f}, {2})), 0.3, 1e-7);
  EXPECT_DOUBLE_EQ(once(m, I64({1, 1}, {2}), yp), 1.0);
  EXPECT_DOUBLE_EQ(once(m, I32({1, 0}, {2, 1}), yp), 0.5);
  Tensor tie = F({0.4f, 0.4f, 0.2f}, {1, 3});
  EXPECT_DOUBLE_EQ(once(m, I64({0}, {1}), tie), 1.0);
  EXPECT_DOUBLE_EQ(once(m, I64({1}, {1}), tie), 0.0);
  // Sequence outputs (batch, time, classes) with (batch, time) labels.
  Tensor seq = F({1, 0, 0, 1, 0, 1, 1, 0}, {2, 2, 2});
  EXPECT_DOUBLE_EQ(once(m, I64({0, 1, 1, 1}, {2, 2}), seq), 0.75);
  EXPECT_THROW(once(m, F({0, 1, 0, 0, 0, 1}, {2, 3}), yp), ShapeError);
}

TEST(Metrics, TopKIncludesTies) {
  Tensor yt = F({0, 0, 1, 0, 1, 0}, {2, 3}), yp = F({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3});
  EXPECT_DOUBLE_EQ(once(M::TopKCategoricalAccuracy({.k = 1}), yt, yp), 0.5);
  EXPECT_NEAR(once(M::TopKCategoricalAccuracy({.k = 1}), yt, yp, F({0.7f, 0.3f}, {2})), 0.3, 1e-7);
  EXPECT_DOUBLE_EQ(once(M::TopKCategoricalAccuracy({.k = 2}), yt, yp), 1.0);
  EXPECT_DOUBLE_EQ(once(M::TopKCategoricalAccuracy(), yt, yp), 1.0);  // k = 5 > classes
  // The label's score ties with the top one: both count as rank 1.
  EXPECT_DOUBLE_EQ(once(M::TopKCategoricalAccuracy({.k = 1}), F({0, 1, 0}, {1, 3}), F({0.5f, 0.5f, 0}, {1, 3})), 1.0);
  auto sparse = M::SparseTopKCategoricalAccuracy({.k = 1});
  EXPECT_DOUBLE_EQ(once(sparse, I64({2, 1}, {2}), yp), 0.5);
  EXPECT_DOUBLE_EQ(once(M::SparseTopKCategoricalAccuracy({.k = 2}), I64({2, 1}, {2, 1}), yp), 1.0);
  EXPECT_DOUBLE_EQ(once(sparse, I64({7, 1}, {2}), yp), 0.5);  // out-of-range label never matches
  EXPECT_THROW(M::TopKCategoricalAccuracy({.k = 0}), ValueError);
  EXPECT_EQ(M::TopKCategoricalAccuracy({.k = 3})->get_config()["k"], 3);
}

TEST(Metrics, AccumulatesOverBatchesAndResets) {
  auto m = M::SparseCategoricalAccuracy();
  EXPECT_DOUBLE_EQ(m->result(), 0.0);  // nothing seen yet
  m->update_state(I64({0, 1}, {2}), F({1, 0, 0, 1}, {2, 2}));           // 2 of 2
  m->update_state(I64({0, 0, 0}, {3}), F({1, 0, 0, 1, 0, 1}, {3, 2}));  // 1 of 3
  m->update_state(I64({1}, {1}), F({1, 0}, {1, 2}), F({3}, {1}));       // 0 of 1, weight 3
  EXPECT_DOUBLE_EQ(m->result(), 3.0 / 8);
  std::vector<double> st = m->state();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_DOUBLE_EQ(st[0], 3);
  EXPECT_DOUBLE_EQ(st[1], 8);
  m->reset_state();
  EXPECT_DOUBLE_EQ(m->result(), 0.0);
  m->set_state({1, 4});
  EXPECT_DOUBLE_EQ(m->result(), 0.25);
  EXPECT_THROW(m->set_state({1}), ValueError);
}

TEST(Metrics, MeanWeightingRules) {
  auto mean = M::Mean();
  mean->update_state(F({1, 3, 5, 7}, {4}));
  EXPECT_DOUBLE_EQ(mean->result(), 4.0);
  mean->update_state(F({2}, {1}), F({4}, {1}));  // weighted: (16 + 8) / (4 + 4)
  EXPECT_DOUBLE_EQ(mean->result(), 3.0);
  mean->reset_state();
  mean->update_values(F({1, 3, 5, 7}, {4}), F({1, 1, 0, 0}, {4}));
  EXPECT_DOUBLE_EQ(mean->result(), 2.0);
  // Rank-2 values are averaged per sample; (batch, 1) weights match (batch,) samples.
  mean->reset_state();
  mean->update_state(F({1, 3, 10, 20}, {2, 2}), F({1, 3}, {2, 1}));
  EXPECT_DOUBLE_EQ(mean->result(), (2 * 1 + 15 * 3) / 4.0);
  // The trainer's loss tracker: scalar loss weighted by the batch size.
  mean->reset_state();
  mean->update_state(Tensor::scalar(2.0), Tensor::scalar(10));
  mean->update_state(Tensor::scalar(4.0), Tensor::scalar(30));
  EXPECT_DOUBLE_EQ(mean->result(), 3.5);
  EXPECT_DOUBLE_EQ(mean->count(), 40);
  EXPECT_EQ(mean->direction(), "unknown");
  EXPECT_THROW(mean->update_state(F({1}, {1}), F({1}, {1}), F({1}, {1})), TypeError);
  EXPECT_THROW(mean->update_state(F({1, 2}, {2}), F({1, 2, 3}, {3})), ShapeError);
}

TEST(Metrics, MeanMetricWrapperRunsWithoutTape) {
  M::MeanMetricWrapper wrapper(
      [](const Tensor& t, const Tensor& p) { return ops::abs(ops::subtract(p, t)); }, "abs_error");
  Tensor yp = F({1, 2, 4, 8}, {2, 2});
  yp.set_requires_grad(true);
  GradientTape tape;
  wrapper.update_state(F({0, 0, 0, 0}, {2, 2}), yp);
  EXPECT_DOUBLE_EQ(wrapper.result(), 15.0 / 4);
  EXPECT_EQ(wrapper.name(), "abs_error");

  auto mse = M::get("mse");
  EXPECT_EQ(mse->class_name(), "MeanSquaredError");
  EXPECT_EQ(mse->name(), "mse");
  EXPECT_EQ(mse->direction(), "min");
  EXPECT_DOUBLE_EQ(once(mse, F({0, 1, 0, 0}, {2, 2}), F({1, 1, 1, 0}, {2, 2})), 0.5);
  EXPECT_DOUBLE_EQ(once(M::get("mae"), F({1, 2}, {2}), F({2, 4}, {2, 1})), 1.5);
}

TEST(Metrics, ResolveAccuracyLikeKeras) {
  auto cls = [](const M::MetricPtr& m) { return m->class_name(); };
  EXPECT_EQ(cls(M::resolve_accuracy("sparse_categorical_crossentropy", {32}, {32, 10})), "SparseCategoricalAccuracy");
  EXPECT_EQ(cls(M::resolve_accuracy("CategoricalCrossentropy", {32, 10}, {32, 10})), "CategoricalAccuracy");
  EXPECT_EQ(cls(M::resolve_accuracy("binary_crossentropy", {32, 4}, {32, 4})), "BinaryAccuracy");
  EXPECT_EQ(cls(M::resolve_accuracy(losses::SparseCategoricalCrossentropy({.from_logits = true}), {-1}, {-1, 10})),
            "SparseCategoricalAccuracy");
  // Other losses: decided from the shapes.
  EXPECT_EQ(cls(M::resolve_accuracy("mse", {32, 1}, {32, 1})), "BinaryAccuracy");
  EXPECT_EQ(cls(M::resolve_accuracy("mse", {32}, {32, 10})), "SparseCategoricalAccuracy");
  EXPECT_EQ(cls(M::resolve_accuracy("", {32, 1}, {32, 10})), "SparseCategoricalAccuracy");
  EXPECT_EQ(cls(M::resolve_accuracy("huber", {32, 10}, {32, 10})), "CategoricalAccuracy");
  EXPECT_EQ(cls(M::resolve_accuracy(losses::LossPtr{}, {32, 1}, {32, 1})), "BinaryAccuracy");
  EXPECT_EQ(M::resolve_accuracy("mse", {32}, {32, 10}, "acc")->name(), "acc");
  EXPECT_EQ(M::resolve_accuracy("mse", {32}, {32, 10})->name(), "accuracy");
}

TEST(Metrics, RegistryAndConfig) {
  for (auto [id, cls] : std::vector<std::pair<std::string, std::string>>{
           {"accuracy", "Accuracy"}, {"acc", "Accuracy"}, {"binary_accuracy", "BinaryAccuracy"},
           {"categorical_accuracy", "CategoricalAccuracy"}, {"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
           {"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
           {"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"}, {"mse", "MeanSquaredError"},
           {"mae", "MeanAbsoluteError"}, {"SparseCategoricalAccuracy", "SparseCategoricalAccuracy"}, {"mean", "Mean"}}) {
    M::MetricPtr m = M::get(id);
    EXPECT_EQ(m->class_name(), cls) << id;
    EXPECT_EQ(m->name(), id);
  }
  EXPECT_EQ(M::get("top_k_categorical_accuracy")->direction(), "max");
  EXPECT_THROW(M::get("no_such_metric"), ValueError);

  auto topk = M::TopKCategoricalAccuracy({.k = 3, .name = "top3"});
  json s = M::serialize(*topk);
  EXPECT_EQ(s["module"], "keras.metrics");
  EXPECT_EQ(s["class_name"], "TopKCategoricalAccuracy");
  EXPECT_EQ(s["config"], (json{{"name", "top3"}, {"dtype", "float32"}, {"k", 3}}));
  M::MetricPtr back = M::deserialize(s);
  EXPECT_EQ(back->get_config(), s["config"]);
  // Keras 3 dtype policy objects and Keras 2 plain objects both load.
  json k3 = {{"class_name", "BinaryAccuracy"},
             {"config", {{"name", "ba"}, {"threshold", 0.25},
                         {"dtype", {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", "float32"}}}}}}}};
  M::MetricPtr ba = M::deserialize(k3);
  EXPECT_EQ(ba->name(), "ba");
  EXPECT_EQ(ba->get_config()["threshold"], 0.25);
  EXPECT_EQ(M::deserialize("sparse_categorical_accuracy")->class_name(), "SparseCategoricalAccuracy");
}
