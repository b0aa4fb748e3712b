// The masking core (layers/layer.h): masks attached to tensors flow through eager calls and
// functional graphs as in Keras (supports_masking / compute_mask / _set_mask_metadata), explicit
// masks override attached ones, tensors passed by keyword reach call() and survive a functional
// graph, and losses and mean metrics weigh the timesteps of a masked prediction as Keras's
// apply_mask does.
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "keras/models/model.h"
#include "layers/input_layer.h"
#include "losses/regression.h"
#include "metrics/accuracy.h"
#include "metrics/mean.h"
#include "support/expect_error.h"

using namespace keras;
using keras::testing::expect_error;

namespace {

// Like Masking(mask_value=0): a timestep whose features are all 0 is padding.
class ZeroMask : public Layer {
 public:
  std::string class_name() const override { return "TestZeroMask"; }
  bool supports_masking() const override { return true; }
  TensorList call(const TensorList& in, const CallContext&) override { return {ops::multiply(in[0], 1.0)}; }
  TensorList compute_mask(const TensorList& in, const TensorList&) const override {
    Tensor nonzero = ops::cast(ops::not_equal(in[0], Tensor::scalar(0.0)), DType::float32);
    return {ops::greater(ops::max(nonzero, {-1}), Tensor::scalar(0.0))};
  }
};

// Doubles its input; passes the mask on (Keras's default compute_mask) when `masking`.
class Doubler : public Layer {
 public:
  explicit Doubler(bool masking) : masking_(masking) {}
  std::string class_name() const override { return "TestDoubler"; }
  bool supports_masking() const override { return masking_; }
  TensorList call(const TensorList& in, const CallContext& ctx) override {
    seen_masks = ctx.masks;
    return {ops::multiply(in[0], 2.0)};
  }
  TensorList seen_masks;

 private:
  bool masking_;
};

// call(x, *, extra=None, scale=1): x * scale + every `extra` tensor.
class KeywordAdd : public Layer {
 public:
  std::string class_name() const override { return "TestKeywordAdd"; }
  TensorList call(const TensorList& in, const CallContext& ctx) override {
    EXPECT_EQ(ctx.positional_count(in.size()), 1u);
    Tensor y = ops::multiply(in[0], ctx.options.value("scale", 1.0));
    for (const auto& e : ctx.keyword(in, "extra")) y = ops::add(y, e);
    return {y};
  }
};

// (batch 2, time 3, features 2); sample 0 ends with one padded step, sample 1 with two.
Tensor padded_batch() {
  return Tensor::from_vector<float>({1, 2, 3, 4, 0, 0, 5, 6, 0, 0, 0, 0}, {2, 3, 2});
}

std::vector<bool> mask_values(const Tensor& m) {
  std::vector<bool> out;
  for (int64_t i = 0; i < m.numel(); ++i) out.push_back(element_as_double(m, i) != 0);
  return out;
}

const std::vector<bool> kExpectedMask = {true, true, false, true, false, false};

}  // namespace

TEST(MaskingCore, EagerCallsAttachAndPropagateMasks) {
  auto masker = std::make_shared<ZeroMask>();
  auto pass = std::make_shared<Doubler>(true);
  auto drop = std::make_shared<Doubler>(false);
  Tensor x = padded_batch();
  Tensor y = (*masker)(x);
  ASSERT_TRUE(y.keras_mask().defined());
  EXPECT_EQ(y.keras_mask().dtype(), DType::boolean);
  EXPECT_EQ(y.keras_mask().shape(), (Shape{2, 3}));
  EXPECT_EQ(mask_values(y.keras_mask()), kExpectedMask);
  EXPECT_FALSE(x.keras_mask().defined());

  Tensor z = (*pass)(y);
  ASSERT_EQ(pass->seen_masks.size(), 1u);
  EXPECT_TRUE(pass->seen_masks[0].same(y.keras_mask()));
  ASSERT_TRUE(z.keras_mask().defined());
  EXPECT_EQ(mask_values(z.keras_mask()), kExpectedMask);

  Tensor w = (*drop)(y);
  EXPECT_EQ(drop->seen_masks.size(), 1u);  // the layer still sees its input's mask
  EXPECT_FALSE(w.keras_mask().defined());  // but does not pass it on
  (*pass)(w);
  EXPECT_TRUE(pass->seen_masks.empty());  // no input has a mask: no masks at all
}

TEST(MaskingCore, ExplicitMaskOverridesTheAttachedOne) {
  auto masker = std::make_shared<ZeroMask>();
  auto pass = std::make_shared<Doubler>(true);
  Tensor y = (*masker)(padded_batch());
  Tensor all = Tensor::ones({2, 3}, DType::boolean);
  Tensor z = (*pass)(TensorList{y}, CallArgs{.mask = {all}})[0];
  EXPECT_EQ(mask_values(z.keras_mask()), std::vector<bool>(6, true));
  expect_error<ValueError>([&] { (*pass)(TensorList{y}, CallArgs{.mask = {all, all}}); }, {"one mask per input", "2 masks"});
}

TEST(MaskingCore, FunctionalGraphPropagatesMasks) {
  auto in = layers::Input({3, 2});
  auto masked = (*std::make_shared<ZeroMask>())(in);
  auto out_kept = (*std::make_shared<Doubler>(true))(masked);
  auto out_dropped = (*std::make_shared<Doubler>(false))(masked);
  auto model = std::make_shared<Model>(std::vector<KerasTensor>{in}, std::vector<KerasTensor>{out_kept, out_dropped});
  TensorList out = (*model)(TensorList{padded_batch()});
  ASSERT_TRUE(out[0].keras_mask().defined());
  EXPECT_EQ(mask_values(out[0].keras_mask()), kExpectedMask);
  EXPECT_FALSE(out[1].keras_mask().defined());
  // A model nested in another keeps the mask its inner layers computed.
  auto outer_in = layers::Input({3, 2});
  Model outer(outer_in, (*model)(std::vector<KerasTensor>{outer_in})[0]);
  EXPECT_EQ(mask_values(outer(padded_batch()).keras_mask()), kExpectedMask);
}

TEST(MaskingCore, KeywordTensorsReachCallEagerlyAndInAGraph) {
  auto layer = std::make_shared<KeywordAdd>();
  Tensor x = Tensor::from_vector<float>({1, 2}, {1, 2}), e = Tensor::from_vector<float>({10, 20}, {1, 2});
  CallArgs args{.keywords = {"extra", "extra"}, .options = {{"scale", 3.0}}};
  EXPECT_EQ((*layer)(TensorList{x, e, e}, args)[0].to_vector<float>(), (std::vector<float>{23, 46}));

  auto a = layers::Input({2}), b = layers::Input({2});
  auto y = (*layer)(std::vector<KerasTensor>{a, b}, CallArgs{.keywords = {"extra"}, .options = {{"scale", 3.0}}});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].node->args.keywords, std::vector<std::string>{"extra"});
  Model model({a, b}, y);
  EXPECT_EQ(model(TensorList{x, e})[0].to_vector<float>(), (std::vector<float>{13, 26}));
  expect_error<ValueError>([&] { (*layer)(TensorList{x}, CallArgs{.keywords = {"extra", "extra"}}); },
                           {"at most one keyword per input", "2 keywords"});
}

TEST(MaskingCore, LossesAverageOverTheUnmaskedTimesteps) {
  // Predictions (2, 3, 1) against zeros: squared errors 1, 4, 100 | 9, 100, 100, where the
  // 100s are padding.
  Tensor y_pred = Tensor::from_vector<float>({1, 2, 10, 3, 10, 10}, {2, 3, 1});
  y_pred.set_keras_mask(Tensor::from_vector<float>({1, 1, 0, 1, 0, 0}, {2, 3}).astype(DType::boolean));
  Tensor y_true = Tensor::zeros({2, 3, 1});
  auto mse = losses::MeanSquaredError();
  EXPECT_NEAR((*mse)(y_true, y_pred).item(), (1 + 4 + 9) / 3.0, 1e-6);
  // A sample weight multiplies in: sample 1 counts twice.
  Tensor sw = Tensor::from_vector<float>({1, 2}, {2, 1});
  EXPECT_NEAR((*mse)(y_true, y_pred, sw).item(), (1 + 4 + 2 * 9) / 3.0, 1e-6);
  auto sum = losses::MeanSquaredError({.reduction = "sum"});
  EXPECT_NEAR((*sum)(y_true, y_pred).item(), 1 + 4 + 9, 1e-5);
  // Fully masked: the loss is 0, not NaN (Keras's divide_no_nan).
  Tensor none = y_pred.detach();
  none.set_keras_mask(Tensor::zeros({2, 3}, DType::boolean));
  EXPECT_EQ((*mse)(y_true, none).item(), 0.0);
}

TEST(MaskingCore, MeanMetricsSkipTheMaskedTimesteps) {
  Tensor y_pred = Tensor::from_vector<float>({1, 2, 10, 3, 10, 10}, {2, 3, 1});
  y_pred.set_keras_mask(Tensor::from_vector<float>({1, 1, 0, 1, 0, 0}, {2, 3}).astype(DType::boolean));
  auto mse = metrics::MeanSquaredError();
  mse->update_state(Tensor::zeros({2, 3, 1}), y_pred);
  EXPECT_NEAR(mse->result(), (1 + 4 + 9) / 3.0, 1e-5);

  // Sparse accuracy over (2, 3) timesteps: the padded ones are wrong and must not count.
  Tensor logits = Tensor::from_vector<float>({1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0}, {2, 3, 2});
  logits.set_keras_mask(Tensor::from_vector<float>({1, 1, 0, 1, 0, 0}, {2, 3}).astype(DType::boolean));
  Tensor labels = Tensor::from_vector<float>({0, 1, 1, 0, 1, 1}, {2, 3});
  auto acc = metrics::SparseCategoricalAccuracy();
  acc->update_state(labels, logits);
  EXPECT_NEAR(acc->result(), 1.0, 1e-6);
}

TEST(MaskingCore, EvaluateReportsTheMaskedLoss) {
  auto in = layers::Input({3, 2});
  auto out = (*std::make_shared<Doubler>(true))((*std::make_shared<ZeroMask>())(in));
  Model model(in, out);
  model.compile({.optimizer = "sgd", .loss = "mse", .metrics = {"mae"}});
  // Outputs 2x: (2,4),(6,8),(0,0) | (10,12),(0,0),(0,0); targets 0 except 50 at padded steps.
  Tensor y = Tensor::from_vector<float>({0, 0, 0, 0, 50, 50, 0, 0, 50, 50, 50, 50}, {2, 3, 2});
  Logs logs = model.evaluate(padded_batch(), y, {.verbose = 0});
  const double sq = (4 + 16 + 36 + 64 + 100 + 144) / 2.0, ab = (2 + 4 + 6 + 8 + 10 + 12) / 2.0;
  EXPECT_NEAR(logs.at("loss"), sq / 3, 1e-4);
  EXPECT_NEAR(logs.at("mae"), ab / 3, 1e-4);
}
