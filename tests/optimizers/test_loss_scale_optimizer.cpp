// LossScaleOptimizer: Keras's dynamic loss scaling. The scaled loss, unscaled updates identical
// to the inner optimizer's, skipped steps on overflow (nothing changes, the scale halves), growth
// after dynamic_growth_steps good steps, delegation of the learning rate and state, configs of
// both Keras generations, errors. Plus the base class's static loss_scale_factor in scale_loss.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend/ops.h"
#include "optimizers/optimizers.h"

using namespace keras;
namespace opt = keras::optimizers;
using Vec = std::vector<double>;

namespace {

Variable var64(const Vec& v) { return Variable(Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}), "d/kernel"); }
Tensor t64(const Vec& v) { return Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}); }
Vec values(const Variable& v) { return v.value().to_vector<double>(); }

}  // namespace

TEST(LossScaleOptimizer, ScalesTheLossAndAppliesUnscaledGradients) {
  auto lso = opt::LossScaleOptimizer(opt::SGD({.learning_rate = 0.1}), {.initial_scale = 1024, .dynamic_growth_steps = 3});
  EXPECT_DOUBLE_EQ(lso->scale_loss(Tensor::scalar(2.0, DType::float64)).item(), 2048.0);
  Variable a = var64({1.0, -2.0}), b = var64({1.0, -2.0});
  auto plain = opt::SGD({.learning_rate = 0.1});
  for (int step = 0; step < 2; ++step) {
    lso->apply({t64({0.5 * 1024, -0.25 * 1024})}, {a});  // gradients of the scaled loss
    plain->apply({t64({0.5, -0.25})}, {b});
  }
  EXPECT_EQ(values(a), values(b));
  EXPECT_EQ(lso->iterations(), 2);
  EXPECT_EQ(lso->step_counter(), 2);
  EXPECT_DOUBLE_EQ(lso->dynamic_scale(), 1024);
  lso->apply({t64({1024, 1024})}, {a});  // the third good step in a row: the scale doubles
  EXPECT_DOUBLE_EQ(lso->dynamic_scale(), 2048);
  EXPECT_EQ(lso->step_counter(), 0);
}

TEST(LossScaleOptimizer, AnOverflowSkipsTheStepAndHalvesTheScale) {
  auto lso = opt::LossScaleOptimizer(opt::Adam({.learning_rate = 0.1}), {.initial_scale = 256});
  Variable v = var64({1.0, 2.0});
  lso->apply({t64({256, 256})}, {v});
  const Vec after_one = values(v);
  const auto slots_before = lso->variables().size();
  for (double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    lso->apply({t64({1.0, bad})}, {v});
    EXPECT_EQ(values(v), after_one);
  }
  EXPECT_EQ(lso->iterations(), 1);
  EXPECT_DOUBLE_EQ(lso->dynamic_scale(), 64);
  EXPECT_EQ(lso->variables().size(), slots_before);  // the inner optimizer's own state
  lso->reset();
  EXPECT_DOUBLE_EQ(lso->dynamic_scale(), 256);
}

TEST(LossScaleOptimizer, LearningRateAndStateAreTheInnerOptimizers) {
  auto inner = opt::Adam({.learning_rate = 0.01});
  auto lso = opt::LossScaleOptimizer(inner);
  lso->set_learning_rate(0.5);
  EXPECT_DOUBLE_EQ(inner->learning_rate(), 0.5);
  EXPECT_DOUBLE_EQ(lso->learning_rate(), 0.5);
  Variable v = var64({1.0});
  lso->build({v});
  EXPECT_TRUE(inner->built());
  // Keras 3's order: its own iteration, learning_rate, step_counter, dynamic_scale, then the inner's.
  auto vars = lso->variables(), inner_vars = inner->variables();
  ASSERT_EQ(vars.size(), inner_vars.size() + 4);
  EXPECT_EQ(vars[2].name(), "step_counter");
  EXPECT_EQ(vars[3].name(), "dynamic_scale");
  for (size_t i = 0; i < inner_vars.size(); ++i) EXPECT_TRUE(vars[4 + i].same(inner_vars[i])) << i;
}

TEST(LossScaleOptimizer, ConfigsOfBothGenerations) {
  auto lso = opt::LossScaleOptimizer(opt::SGD({.learning_rate = 0.2}), {.initial_scale = 128, .dynamic_growth_steps = 10});
  auto back = opt::from_config(opt::serialize(*lso));
  auto* l = dynamic_cast<opt::LossScaleOptimizerImpl*>(back.get());
  ASSERT_NE(l, nullptr);
  EXPECT_DOUBLE_EQ(l->dynamic_scale(), 128);
  EXPECT_EQ(l->inner_optimizer()->class_name(), "SGD");
  EXPECT_FLOAT_EQ(static_cast<float>(l->learning_rate()), 0.2f);
  // tf_keras 2.21's form, as a mixed_float16 model's training_config holds it.
  auto v3 = opt::from_config(nlohmann::json::parse(R"({"class_name": "LossScaleOptimizerV3", "config": {
      "inner_optimizer": {"module": "keras.optimizers", "class_name": "Adam", "config": {"name": "Adam",
      "learning_rate": 0.01, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": false}, "registered_name": null},
      "dynamic": true, "initial_scale": 32768.0, "dynamic_growth_steps": 2000}})"));
  auto* l3 = dynamic_cast<opt::LossScaleOptimizerImpl*>(v3.get());
  ASSERT_NE(l3, nullptr);
  EXPECT_EQ(l3->inner_optimizer()->class_name(), "Adam");
  EXPECT_DOUBLE_EQ(l3->dynamic_scale(), 32768);
}

TEST(LossScaleOptimizer, ErrorsNameWhatIsWrong) {
  EXPECT_THROW(opt::LossScaleOptimizer(nullptr), ValueError);
  EXPECT_THROW(opt::LossScaleOptimizer(opt::SGD(), {.initial_scale = 0}), ValueError);
  EXPECT_THROW(opt::LossScaleOptimizer(opt::SGD(), {.dynamic_growth_steps = 0}), ValueError);
  EXPECT_THROW(opt::LossScaleOptimizer(opt::LossScaleOptimizer(opt::SGD())), ValueError);
  EXPECT_THROW(opt::from_config(nlohmann::json::parse(R"({"class_name": "LossScaleOptimizer", "config": {}})")), ValueError);
}

TEST(Optimizer, ScaleLossUsesTheStaticLossScaleFactor) {
  auto sgd = opt::SGD({.learning_rate = 0.1, .loss_scale_factor = 8.0});
  EXPECT_DOUBLE_EQ(sgd->scale_loss(Tensor::scalar(3.0, DType::float64)).item(), 24.0);
  EXPECT_DOUBLE_EQ(opt::SGD()->scale_loss(Tensor::scalar(3.0, DType::float64)).item(), 3.0);
  // apply() divides by it again: the step is that of the unscaled loss.
  Variable v = var64({1.0});
  sgd->apply({t64({8.0})}, {v});
  EXPECT_NEAR(values(v)[0], 0.9, 1e-8);  // the learning rate is a float32 variable
}
