// Losses against values computed here from Keras 3's formulas (and a few of Keras's documented
// examples), float64 gradient checks through the tape, the fused sparse softmax cross-entropy
// against its composed form, and the error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "losses/crossentropy.h"
#include "losses/regression.h"
#include "losses/sparse_softmax_cross_entropy.h"
#include "support/gradcheck.h"

using namespace keras;
namespace L = keras::losses;
using json = nlohmann::json;

namespace {

Tensor F(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor D(const std::vector<double>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor I32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor I64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, s); }

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

void expect_all_near(const Tensor& t, const std::vector<double>& expected, double tol) {
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "at " << i;
}

// Keras's float32 clip bounds.
const double kLo = static_cast<double>(static_cast<float>(1e-7));
const double kHi = static_cast<double>(static_cast<float>(1.0 - 1e-7));
double clip_prob(double p) { return std::min(std::max(p, kLo), kHi); }

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

std::vector<double> log_softmax_row(const std::vector<double>& x) {
  double m = x[0];
  for (double v : x) m = std::max(m, v);
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  std::vector<double> out;
  for (double v : x) out.push_back(v - m - std::log(s));
  return out;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- regression ----

TEST(Losses, MeanSquaredErrorKerasExample) {
  Tensor yt = F({0, 1, 0, 0}, {2, 2}), yp = F({1, 1, 1, 0}, {2, 2});
  auto mse = L::MeanSquaredError();
  EXPECT_NEAR((*mse)(yt, yp).item(), 0.5, 1e-6);
  EXPECT_NEAR((*mse)(yt, yp, F({0.7f, 0.3f}, {2})).item(), 0.25, 1e-6);
  EXPECT_NEAR((*L::MeanSquaredError({.reduction = "sum"}))(yt, yp).item(), 1.0, 1e-6);
  Tensor none = (*L::MeanSquaredError({.reduction = "none"}))(yt, yp);
  EXPECT_EQ(none.shape(), (Shape{2}));
  expect_all_near(none, {0.5, 0.5}, 1e-6);
  EXPECT_EQ(mse->call(yt, yp).shape(), (Shape{2}));
}

TEST(Losses, MeanAbsoluteErrorAndRankAlignment) {
  // y_true (batch,) against y_pred (batch, 1): Keras expands y_true to (batch, 1).
  Tensor yt = F({1, 2, 3}, {3}), yp = F({1.5f, 1, 5}, {3, 1});
  Tensor per = L::MeanAbsoluteError()->call(yt, yp);
  EXPECT_EQ(per.shape(), (Shape{3}));
  expect_all_near(per, {0.5, 1, 2}, 1e-6);
  EXPECT_NEAR((*L::MeanAbsoluteError())(yt, yp).item(), 3.5 / 3, 1e-6);
  // Integer y_true is cast to y_pred's dtype.
  EXPECT_NEAR((*L::get("mae"))(I32({1, 2, 3}, {3, 1}), yp).item(), 3.5 / 3, 1e-6);
}

TEST(Losses, HuberBothBranches) {
  // Keras doc example: 0.155.
  Tensor yt = F({0, 1, 0, 0}, {2, 2}), yp = F({0.6f, 0.4f, 0.4f, 0.6f}, {2, 2});
  EXPECT_NEAR((*L::Huber())(yt, yp).item(), 0.155, 1e-6);
  // delta 0.5: |e| = 0.6 is linear (0.5*0.6 - 0.125), |e| = 0.4 quadratic (0.08).
  auto h = L::Huber({.delta = 0.5});
  double lin = 0.5 * 0.6 - 0.5 * 0.25, quad = 0.5 * 0.16;
  expect_all_near(h->call(yt, yp), {(lin + lin) / 2, (quad + lin) / 2}, 1e-6);
  EXPECT_THROW(L::Huber({.delta = 0}), ValueError);
}

// ---- binary cross-entropy ----

TEST(Losses, BinaryCrossentropyProbabilities) {
  Tensor yt = F({0, 1, 0, 0}, {2, 2}), yp = F({0.6f, 0.4f, 0.4f, 0.6f}, {2, 2});
  auto bce = [](double y, double p) { p = clip_prob(p); return -(y * std::log(p) + (1 - y) * std::log(1 - p)); };
  double r0 = (bce(0, 0.6) + bce(1, 0.4)) / 2, r1 = (bce(0, 0.4) + bce(0, 0.6)) / 2;
  expect_all_near(L::BinaryCrossentropy()->call(yt, yp), {r0, r1}, 1e-5);
  EXPECT_NEAR((*L::BinaryCrossentropy())(yt, yp).item(), 0.815, 1e-3);  // Keras doc
  // Label smoothing 0.2 moves targets towards 0.5: 0 -> 0.1, 1 -> 0.9.
  double s0 = (bce(0.1, 0.6) + bce(0.9, 0.4)) / 2, s1 = (bce(0.1, 0.4) + bce(0.1, 0.6)) / 2;
  EXPECT_NEAR((*L::BinaryCrossentropy({.label_smoothing = 0.2}))(yt, yp).item(), (s0 + s1) / 2, 1e-5);
}

TEST(Losses, BinaryCrossentropyClipsZeroAndOne) {
  Tensor yt = F({1, 0, 1, 0}, {4, 1}), yp = F({0, 1, 1, 0}, {4, 1});
  Tensor per = L::BinaryCrossentropy()->call(yt, yp);
  double wrong_low = -std::log(kLo), wrong_high = -std::log(1 - kHi), right_high = -std::log(kHi);
  double right_low = -std::log(1 - kLo);
  expect_all_near(per, {wrong_low, wrong_high, right_high, right_low}, 1e-4);
  for (double v : values(per)) EXPECT_TRUE(std::isfinite(v));
}

TEST(Losses, BinaryCrossentropyFromLogitsKerasExample) {
  Tensor yt = F({0, 1, 0, 0}, {2, 2}), yp = F({-18.6f, 0.51f, 2.94f, -12.8f}, {2, 2});
  auto bce = L::BinaryCrossentropy({.from_logits = true});
  auto ref = [](double y, double x) { return softplus(x) - y * x; };
  double r0 = (ref(0, -18.6) + ref(1, 0.51)) / 2, r1 = (ref(0, 2.94) + ref(0, -12.8)) / 2;
  expect_all_near(bce->call(yt, yp), {r0, r1}, 1e-5);
  EXPECT_NEAR((*bce)(yt, yp).item(), 0.8654, 1e-3);
  EXPECT_NEAR((*bce)(yt, yp, F({0.8f, 0.2f}, {2})).item(), (0.8 * r0 + 0.2 * r1) / 2, 1e-5);
  EXPECT_NEAR((*L::BinaryCrossentropy({.from_logits = true, .reduction = "sum"}))(yt, yp).item(), r0 + r1, 1e-5);
  // Rank-1 inputs average to a scalar, as in Keras.
  Tensor flat = bce->call(F({0, 1, 0, 0}, {4}), F({-18.6f, 0.51f, 2.94f, -12.8f}, {4}));
  EXPECT_EQ(flat.rank(), 0);
  EXPECT_NEAR(flat.item(), 0.8654, 1e-3);
  // Smoothing applies to logits too.
  double s = (ref(0.05, -18.6) + ref(0.95, 0.51)) / 2;
  EXPECT_NEAR(values(L::BinaryCrossentropy({.from_logits = true, .label_smoothing = 0.1})->call(yt, yp))[0], s, 1e-5);
}

// ---- categorical cross-entropy ----

TEST(Losses, CategoricalCrossentropyKerasExample) {
  Tensor yt = F({0, 1, 0, 0, 0, 1}, {2, 3}), yp = F({0.05f, 0.95f, 0, 0.1f, 0.8f, 0.1f}, {2, 3});
  auto cce = L::CategoricalCrossentropy();
  expect_all_near(cce->call(yt, yp), {-std::log(0.95), -std::log(0.1)}, 1e-5);
  EXPECT_NEAR((*cce)(yt, yp).item(), 1.177, 1e-3);
  EXPECT_NEAR((*cce)(yt, yp, F({0.3f, 0.7f}, {2})).item(), 0.814, 1e-3);
  EXPECT_NEAR((*L::CategoricalCrossentropy({.reduction = "sum"}))(yt, yp).item(), 2.354, 1e-3);
  EXPECT_NEAR((*L::CategoricalCrossentropy({.reduction = "mean_with_sample_weight"}))(yt, yp, F({0.3f, 0.7f}, {2})).item(),
              (0.3 * -std::log(0.95) + 0.7 * -std::log(0.1)) / 1.0, 1e-5);
}

TEST(Losses, CategoricalCrossentropyRenormalisesClipsAndSmooths) {
  // Rows not summing to 1 are renormalised; a 0 probability for the true class is clipped.
  Tensor yt = F({0, 1, 0, 1, 0, 0}, {2, 3}), yp = F({1, 2, 1, 0, 3, 1}, {2, 3});
  expect_all_near(L::CategoricalCrossentropy()->call(yt, yp), {-std::log(0.5), -std::log(kLo)}, 1e-4);
  // Label smoothing 0.3 over 3 classes: 0 -> 0.1, 1 -> 0.8.
  std::vector<double> q0 = {0.25, 0.5, 0.25}, q1 = {clip_prob(0), 0.75, 0.25};
  double r0 = -(0.1 * std::log(q0[0]) + 0.8 * std::log(q0[1]) + 0.1 * std::log(q0[2]));
  double r1 = -(0.8 * std::log(q1[0]) + 0.1 * std::log(q1[1]) + 0.1 * std::log(q1[2]));
  expect_all_near(L::CategoricalCrossentropy({.label_smoothing = 0.3})->call(yt, yp), {r0, r1}, 1e-4);
}

TEST(Losses, CategoricalCrossentropyFromLogitsAndAxis) {
  std::vector<double> x0 = {2, -1, 0.5}, x1 = {-3, 4, 1};
  Tensor yt = F({0, 0, 1, 0.2f, 0.8f, 0}, {2, 3}), yp = F({2, -1, 0.5f, -3, 4, 1}, {2, 3});
  auto l0 = log_softmax_row(x0), l1 = log_softmax_row(x1);
  expect_all_near(L::CategoricalCrossentropy({.from_logits = true})->call(yt, yp),
                  {-l0[2], -(0.2 * l1[0] + 0.8 * l1[1])}, 1e-5);
  // Classes on axis 0: the transposed problem gives the same losses.
  Tensor ytT = F({0, 0.2f, 0, 0.8f, 1, 0}, {3, 2}), ypT = F({2, -3, -1, 4, 0.5f, 1}, {3, 2});
  expect_all_near(L::CategoricalCrossentropy({.from_logits = true, .axis = 0})->call(ytT, ypT),
                  {-l0[2], -(0.2 * l1[0] + 0.8 * l1[1])}, 1e-5);
}

// ---- sparse categorical cross-entropy ----

TEST(Losses, SparseCategoricalCrossentropyKerasExample) {
  Tensor yp = F({0.05f, 0.95f, 0, 0.1f, 0.8f, 0.1f}, {2, 3});
  auto scce = L::SparseCategoricalCrossentropy();
  EXPECT_NEAR((*scce)(I64({1, 2}, {2}), yp).item(), 1.177, 1e-3);
  // Labels as int32 (batch, 1), or floats holding integers.
  EXPECT_NEAR((*scce)(I32({1, 2}, {2, 1}), yp).item(), 1.177, 1e-3);
  EXPECT_NEAR((*scce)(F({1, 2}, {2}), yp).item(), 1.177, 1e-3);
  // A 0 probability for the label is clipped to eps.
  expect_all_near(scce->call(I64({2, 0}, {2}), yp), {-std::log(kLo), -std::log(0.1)}, 1e-4);
  EXPECT_THROW(scce->call(F({1.5f, 2}, {2}), yp), ValueError);
}

TEST(Losses, SparseCategoricalCrossentropyFromLogits) {
  std::vector<double> x0 = {2, -1, 0.5}, x1 = {-3, 4, 1};
  Tensor yp = F({2, -1, 0.5f, -3, 4, 1}, {2, 3});
  auto l0 = log_softmax_row(x0), l1 = log_softmax_row(x1);
  auto scce = L::SparseCategoricalCrossentropy({.from_logits = true});
  expect_all_near(scce->call(I32({0, 2}, {2}), yp), {-l0[0], -l1[2]}, 1e-5);
  {
    // The fused op is what the tape records for 2-D logits.
    Tensor x = yp.clone();
    x.set_requires_grad(true);
    GradientTape tape;
    Tensor per_sample = scce->call(I32({0, 2}, {2}), x);
    ASSERT_TRUE(per_sample.grad_fn() != nullptr);
    EXPECT_EQ(per_sample.grad_fn()->op->name, "sparse_softmax_cross_entropy");
  }
  EXPECT_NEAR((*scce)(I32({0, 2}, {2}), yp, F({2, 0}, {2})).item(), -l0[0], 1e-5);
  // Higher-rank inputs: (2, 1, 3) logits with (2, 1) labels give (2, 1) losses.
  Tensor per = scce->call(I64({0, 2}, {2, 1}), yp.view({2, 1, 3}));
  EXPECT_EQ(per.shape(), (Shape{2, 1}));
  expect_all_near(per, {-l0[0], -l1[2]}, 1e-5);
}

TEST(Losses, SparseLabelsOutOfRangeNameTheLabel) {
  Tensor yp = F({0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f}, {2, 3});
  for (bool logits : {false, true}) {
    auto scce = L::SparseCategoricalCrossentropy({.from_logits = logits});
    std::string msg = message_of([&] { scce->call(I64({0, 3}, {2}), yp); });
    EXPECT_NE(msg.find("sparse_categorical_crossentropy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("label 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("position 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3 classes"), std::string::npos) << msg;
    EXPECT_THROW(scce->call(I64({0, 3}, {2}), yp), IndexError);
    EXPECT_THROW(scce->call(I32({-1, 0}, {2}), yp), IndexError);
  }
  // The op itself checks too.
  EXPECT_THROW(ops::sparse_softmax_cross_entropy(yp, I64({5, 0}, {2})), IndexError);
}

TEST(Losses, FusedSparseSoftmaxMatchesComposed) {
  Tensor logits = random::normal({6, 5}, 0, 3, uint64_t{11}, DType::float64);
  std::vector<int64_t> labels = {0, 4, 2, 2, 1, 3};
  Tensor lab = I64(labels, {6});
  std::vector<double> onehot(30, 0.0);
  for (int i = 0; i < 6; ++i) onehot[static_cast<size_t>(i * 5 + labels[static_cast<size_t>(i)])] = 1;
  Tensor oh = D(onehot, {6, 5});

  Tensor x1 = logits.clone(), x2 = logits.clone();
  x1.set_requires_grad(true);
  x2.set_requires_grad(true);
  TensorList g1, g2;
  Tensor fused, composed;
  {
    GradientTape tape;
    fused = ops::sparse_softmax_cross_entropy(x1, lab);
    g1 = tape.gradient(ops::sum(fused), {x1});
  }
  {
    GradientTape tape;
    composed = ops::negative(ops::sum(ops::multiply(oh, ops::log_softmax(x2, -1)), {1}));
    g2 = tape.gradient(ops::sum(composed), {x2});
  }
  expect_all_near(fused, values(composed), 1e-12);
  expect_all_near(g1[0], values(g2[0]), 1e-12);

  // And the tape's gradient agrees with central differences (float64, and float32 with a sweep).
  keras::testing::check_gradients(
      "sparse_softmax_cross_entropy", [&](const TensorList& in) { return ops::sparse_softmax_cross_entropy(in[0], lab); },
      {logits});
  keras::testing::check_gradients(
      "sparse_softmax_cross_entropy f32", [&](const TensorList& in) { return ops::sparse_softmax_cross_entropy(in[0], lab); },
      {logits.astype(DType::float32)});
}

TEST(Losses, LargeLogitsStayFinite) {
  Tensor yp = F({1000, 0, -1000, -1000, 1000, 0}, {2, 3});
  Tensor yp_grad = yp.clone();
  yp_grad.set_requires_grad(true);
  std::vector<std::pair<std::string, L::LossPtr>> cases = {
      {"scce", L::SparseCategoricalCrossentropy({.from_logits = true})},
      {"cce", L::CategoricalCrossentropy({.from_logits = true})},
      {"bce", L::BinaryCrossentropy({.from_logits = true})}};
  for (auto& [name, loss] : cases) {
    Tensor yt = name == "scce" ? I64({2, 1}, {2}) : F({0, 0, 1, 0, 1, 0}, {2, 3});
    GradientTape tape;
    Tensor value = (*loss)(yt, yp_grad);
    TensorList g = tape.gradient(value, {yp_grad});
    EXPECT_TRUE(std::isfinite(value.item())) << name;
    for (double v : values(g[0])) EXPECT_TRUE(std::isfinite(v)) << name;
  }
  // Wrong-class logit margin 2000: the loss is the margin, not inf.
  EXPECT_NEAR(values(L::SparseCategoricalCrossentropy({.from_logits = true})->call(I64({2, 1}, {2}), yp))[0], 2000, 1e-2);
  EXPECT_NEAR(values(L::BinaryCrossentropy({.from_logits = true})->call(F({0}, {1, 1}), F({1000}, {1, 1})))[0], 1000, 1e-2);
}

// ---- gradients through the tape, float64 ----

TEST(Losses, GradientsFloat64) {
  Tensor yt = D({0.2, 0.9, 0.4, 0.1, 0.6, 0.3}, {2, 3});
  Tensor probs = D({0.3, 0.5, 0.2, 0.1, 0.7, 0.2}, {2, 3});
  Tensor logits = D({0.3, -1.2, 2.0, 1.5, 0.1, -0.7}, {2, 3});
  Tensor onehot = D({0, 1, 0, 0, 0, 1}, {2, 3});
  Tensor labels = I64({1, 2}, {2});
  Tensor weights = D({0.4, 1.5}, {2});
  struct Case {
    std::string name;
    L::LossPtr loss;
    Tensor y_true, y_pred;
  };
  std::vector<Case> cases = {
      {"mse", L::MeanSquaredError(), yt, logits},
      {"mae", L::MeanAbsoluteError(), yt, logits},
      {"huber", L::Huber({.delta = 0.8}), yt, logits},
      {"bce", L::BinaryCrossentropy(), yt, probs},
      {"bce_smooth", L::BinaryCrossentropy({.label_smoothing = 0.1}), yt, probs},
      {"bce_logits", L::BinaryCrossentropy({.from_logits = true}), yt, logits},
      {"cce", L::CategoricalCrossentropy(), onehot, probs},
      {"cce_smooth", L::CategoricalCrossentropy({.label_smoothing = 0.2}), onehot, probs},
      {"cce_logits", L::CategoricalCrossentropy({.from_logits = true}), onehot, logits},
      {"scce", L::SparseCategoricalCrossentropy(), labels, probs},
      {"scce_logits", L::SparseCategoricalCrossentropy({.from_logits = true}), labels, logits},
  };
  for (auto& c : cases) {
    auto loss = c.loss;
    Tensor y_true = c.y_true;
    keras::testing::check_gradients(
        c.name, [&](const TensorList& in) { return (*loss)(y_true, in[0], weights); }, {c.y_pred});
    keras::testing::check_gradients(
        c.name + " none", [&](const TensorList& in) { return loss->call(y_true, in[0]); }, {c.y_pred});
  }
}

// ---- reductions, shapes, config, registry ----

TEST(Losses, ReductionsAndSampleWeights) {
  Tensor yt = F({0, 1, 0, 0}, {2, 2}), yp = F({1, 1, 1, 0}, {2, 2});
  // (batch, 1) weights and a scalar weight broadcast; the divisor stays the element count.
  EXPECT_NEAR((*L::MeanSquaredError())(yt, yp, F({0.7f, 0.3f}, {2, 1})).item(), 0.25, 1e-6);
  EXPECT_NEAR((*L::MeanSquaredError())(yt, yp, Tensor::scalar(2.0)).item(), 1.0, 1e-6);
  EXPECT_NEAR((*L::MeanSquaredError({.reduction = "mean_with_sample_weight"}))(yt, yp, F({0, 0}, {2})).item(), 0.0, 0);
  Tensor none = (*L::MeanSquaredError({.reduction = "none"}))(yt, yp, F({2, 3}, {2}));
  expect_all_near(none, {1.0, 1.5}, 1e-6);
  EXPECT_THROW((*L::MeanSquaredError())(yt, yp, F({1, 2, 3}, {3})), ShapeError);
  EXPECT_THROW(L::MeanSquaredError({.reduction = "average"}), ValueError);
}

TEST(Losses, ShapeMismatchNamesLossAndShapes) {
  std::string msg = message_of([] { L::CategoricalCrossentropy()->call(Tensor::zeros({4, 3}), Tensor::zeros({4, 2})); });
  EXPECT_NE(msg.find("categorical_crossentropy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4, 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4, 2)"), std::string::npos) << msg;
  EXPECT_THROW(L::MeanSquaredError()->call(Tensor::zeros({4, 3}), Tensor::zeros({4, 2})), ShapeError);
  EXPECT_THROW(L::BinaryCrossentropy()->call(Tensor::zeros({4, 3}), Tensor::zeros({3, 4})), ShapeError);
  // One-hot labels given to the sparse loss.
  msg = message_of([] { L::SparseCategoricalCrossentropy()->call(Tensor::zeros({4, 3}), Tensor::zeros({4, 3})); });
  EXPECT_NE(msg.find("sparse_categorical_crossentropy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4, 3)"), std::string::npos) << msg;
  EXPECT_THROW(L::SparseCategoricalCrossentropy()->call(Tensor::zeros({4, 3}), Tensor::zeros({4, 3})), ShapeError);
}

TEST(Losses, ConfigRoundTripAndRegistry) {
  auto cce = L::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1, .name = "cce"});
  json c = cce->get_config();
  EXPECT_EQ(c["name"], "cce");
  EXPECT_EQ(c["reduction"], "sum_over_batch_size");
  EXPECT_EQ(c["from_logits"], true);
  EXPECT_DOUBLE_EQ(c["label_smoothing"].get<double>(), 0.1);
  EXPECT_EQ(c["axis"], -1);
  json s = L::serialize(*cce);
  EXPECT_EQ(s["module"], "keras.losses");
  EXPECT_EQ(s["class_name"], "CategoricalCrossentropy");
  EXPECT_TRUE(s["registered_name"].is_null());
  L::LossPtr back = L::deserialize(s);
  EXPECT_EQ(back->class_name(), "CategoricalCrossentropy");
  EXPECT_EQ(back->get_config(), c);

  // Keras 2 form, null reduction, unknown keys ignored.
  json k2 = {{"class_name", "SparseCategoricalCrossentropy"},
             {"config", {{"from_logits", true}, {"reduction", nullptr}, {"name", "s"}, {"ignore_class", nullptr}, {"fn", "x"}}}};
  L::LossPtr sc = L::deserialize(k2);
  EXPECT_EQ(sc->reduction(), "none");
  EXPECT_EQ(sc->get_config()["from_logits"], true);
  EXPECT_EQ(L::deserialize(json{{"class_name", "Huber"}, {"config", {{"delta", 2.5}}}})->get_config()["delta"], 2.5);

  for (auto [id, cls] : std::vector<std::pair<std::string, std::string>>{
           {"mse", "MeanSquaredError"}, {"mean_squared_error", "MeanSquaredError"}, {"mae", "MeanAbsoluteError"},
           {"huber", "Huber"}, {"binary_crossentropy", "BinaryCrossentropy"},
           {"categorical_crossentropy", "CategoricalCrossentropy"},
           {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
           {"MeanSquaredError", "MeanSquaredError"}}) {
    EXPECT_EQ(L::get(id)->class_name(), cls) << id;
  }
  EXPECT_EQ(L::get("sparse_categorical_crossentropy")->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(L::deserialize("mse")->class_name(), "MeanSquaredError");
  EXPECT_EQ(L::deserialize(json{{"class_name", "function"}, {"config", "mae"}})->class_name(), "MeanAbsoluteError");
  std::string msg = message_of([] { L::get("no_such_loss"); });
  EXPECT_NE(msg.find("no_such_loss"), std::string::npos);
  EXPECT_THROW(L::get("no_such_loss"), ValueError);
}
