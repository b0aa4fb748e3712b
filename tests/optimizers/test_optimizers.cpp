// Optimizers against Keras 3's update formulas, re-derived here by hand in double precision:
// three steps on a small variable with fixed gradients, then clipping, weight decay, schedules,
// slot naming/order, frozen variables, config round trips and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "optimizers/optimizers.h"

using namespace keras;
namespace opt = keras::optimizers;
namespace sched = keras::optimizers::schedules;
using Vec = std::vector<double>;

namespace {

const Vec kInit = {0.5, -1.25, 2.0, 0.0};
const std::vector<Vec> kGrads = {{0.1, -0.2, 0.3, -0.4}, {0.5, 0.25, -0.75, 1.0}, {-0.3, 0.6, 0.05, -0.9}};

Variable var64(const Vec& v, const std::string& path = "dense/kernel", bool trainable = true) {
  return Variable(Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}), path, trainable);
}
Tensor t64(const Vec& v) { return Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}); }
Vec values(const Variable& v) { return v.value().to_vector<double>(); }

void expect_close(const Vec& got, const Vec& want, double rel = 1e-6, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::max(1e-3, std::abs(want[i]))) << what << " element " << i;
}

// Runs three steps of `o` on kInit with kGrads; returns the variable.
Variable run3(const opt::OptimizerPtr& o) {
  Variable v = var64(kInit);
  for (const auto& g : kGrads) o->apply({t64(g)}, {v});
  EXPECT_EQ(o->iterations(), 3);
  return v;
}

// A hand-written reference: per element, given (w, g, state, step t (1-based)) -> new w.
using Rule = std::function<double(double w, double g, std::vector<double>& state, int t)>;
Vec reference3(const Rule& rule, size_t state_size, double state_init = 0.0) {
  Vec w = kInit;
  std::vector<std::vector<double>> state(w.size(), std::vector<double>(state_size, state_init));
  for (int t = 1; t <= 3; ++t)
    for (size_t i = 0; i < w.size(); ++i) w[i] = rule(w[i], kGrads[t - 1][i], state[i], t);
  return w;
}

Rule adam_rule(double lr, double b1, double b2, double eps, bool amsgrad, double wd = 0) {
  return [=](double w, double g, std::vector<double>& s, int t) {
    w = w - w * wd * lr;
    double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    s[0] += (g - s[0]) * (1 - b1);
    s[1] += (g * g - s[1]) * (1 - b2);
    double v = s[1];
    if (amsgrad) v = s[2] = std::max(s[2], s[1]);
    return w - alpha * s[0] / (std::sqrt(v) + eps);
  };
}

Rule rmsprop_rule(double lr, double rho, double mu, double eps, bool centered) {
  return [=](double w, double g, std::vector<double>& s, int) {
    s[0] = rho * s[0] + (1 - rho) * g * g;
    double denom = s[0] + eps;
    if (centered) {
      s[2] = rho * s[2] + (1 - rho) * g;
      denom = s[0] - s[2] * s[2] + eps;
    }
    double inc = lr * g / std::sqrt(denom);
    if (mu > 0) {
      s[1] = mu * s[1] + inc;
      return w - s[1];
    }
    return w - inc;
  };
}

std::vector<std::string> names(const std::vector<Variable>& vars) {
  std::vector<std::string> out;
  for (const auto& v : vars) out.push_back(v.name());
  return out;
}

}  // namespace

// ---- update rules ----

TEST(Optimizers, SGDPlainMomentumNesterov) {
  expect_close(values(run3(opt::SGD())),
               reference3([](double w, double g, Vec&, int) { return w - 0.01 * g; }, 0), 1e-6, "sgd");
  expect_close(values(run3(opt::SGD({.learning_rate = 0.1, .momentum = 0.9}))),
               reference3([](double w, double g, Vec& s, int) { s[0] = 0.9 * s[0] - 0.1 * g; return w + s[0]; }, 1),
               1e-6, "momentum");
  expect_close(values(run3(opt::SGD({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true}))),
               reference3([](double w, double g, Vec& s, int) {
                 s[0] = 0.9 * s[0] - 0.1 * g;
                 return w + 0.9 * s[0] - 0.1 * g;
               }, 1),
               1e-6, "nesterov");
}

TEST(Optimizers, AdamAndAmsgrad) {
  expect_close(values(run3(opt::Adam())), reference3(adam_rule(1e-3, 0.9, 0.999, 1e-7, false), 3), 1e-6, "adam");
  expect_close(values(run3(opt::Adam({.learning_rate = 0.05, .beta_1 = 0.8, .beta_2 = 0.95, .epsilon = 1e-3}))),
               reference3(adam_rule(0.05, 0.8, 0.95, 1e-3, false), 3), 1e-6, "adam custom");
  // Gradients that shrink make v fall below its running max, so amsgrad differs from Adam.
  expect_close(values(run3(opt::Adam({.learning_rate = 0.05, .amsgrad = true}))),
               reference3(adam_rule(0.05, 0.9, 0.999, 1e-7, true), 3), 1e-6, "amsgrad");
}

TEST(Optimizers, AdamWDecoupledDecay) {
  expect_close(values(run3(opt::AdamW({.learning_rate = 0.01}))),
               reference3(adam_rule(0.01, 0.9, 0.999, 1e-7, false, 0.004), 3), 1e-6, "adamw");
  expect_close(values(run3(opt::AdamW({.learning_rate = 0.01, .weight_decay = 0.5}))),
               reference3(adam_rule(0.01, 0.9, 0.999, 1e-7, false, 0.5), 3), 1e-6, "adamw wd 0.5");
  EXPECT_THROW(opt::AdamW({.weight_decay = std::nullopt}), ValueError);
}

TEST(Optimizers, RMSpropVariants) {
  for (double mu : {0.0, 0.5})
    for (bool centered : {false, true}) {
      auto o = opt::RMSprop({.learning_rate = 0.01, .momentum = mu, .centered = centered});
      expect_close(values(run3(o)), reference3(rmsprop_rule(0.01, 0.9, mu, 1e-7, centered), 3), 1e-6,
                   "rmsprop mu=" + std::to_string(mu) + " centered=" + std::to_string(centered));
    }
}

TEST(Optimizers, Adagrad) {
  auto rule = [](double w, double g, Vec& s, int) {
    s[0] += g * g;
    return w - 0.1 * g / std::sqrt(s[0] + 1e-7);
  };
  expect_close(values(run3(opt::Adagrad({.learning_rate = 0.1}))), reference3(rule, 1, 0.1), 1e-6, "adagrad");
}

TEST(Optimizers, Float32MatchesDoubleReference) {
  auto o = opt::Adam({.learning_rate = 0.01});
  std::vector<float> init(kInit.begin(), kInit.end());
  Variable v(Tensor::from_vector<float>(init, {4}), "w");
  for (const auto& g : kGrads) {
    std::vector<float> gf(g.begin(), g.end());
    o->apply({Tensor::from_vector<float>(gf, {4})}, {v});
  }
  expect_close(v.value().to_vector<double>(), reference3(adam_rule(0.01, 0.9, 0.999, 1e-7, false), 3), 1e-5);
}

TEST(Optimizers, StridedAndOtherDtypeGradients) {
  // A transposed (non-contiguous) float32 gradient for a float64 variable.
  Variable v(Tensor::zeros({2, 2}, DType::float64), "w");
  Tensor g = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}).permuted();
  opt::SGD({.learning_rate = 1.0})->apply({g}, {v});
  expect_close(values(v), {-1, -3, -2, -4});
}

TEST(Optimizers, LargeTensorTakesThreadedPath) {
  const int64_t n = 1 << 16;
  Vec w0(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    w0[i] = std::sin(0.001 * i);
    g[i] = std::cos(0.003 * i);
  }
  Variable v = var64(w0, "big");
  auto o = opt::SGD({.learning_rate = 0.1, .momentum = 0.9});
  o->apply({t64(g)}, {v});
  o->apply({t64(g)}, {v});
  Vec got = values(v);
  // The learning rate lives in a float32 variable, as in Keras; momentum is a double attribute.
  const double lr = static_cast<float>(0.1);
  for (int64_t i = 0; i < n; i += 997) {
    double m1 = -lr * g[i], m2 = 0.9 * m1 - lr * g[i];
    EXPECT_NEAR(got[i], w0[i] + m1 + m2, 1e-12);
  }
}

TEST(Optimizers, Float32AdamOnLargeTensorsMatchesTheDoubleRule) {
  // Threaded spans (boundaries on 16-element multiples) and a vector tail: an odd size. AdamW
  // with amsgrad and clipvalue takes every branch of the float32 kernel.
  const int64_t n = (1 << 16) + 5;
  std::vector<float> w0(n);
  std::vector<std::vector<float>> grads(3, std::vector<float>(n));
  for (int64_t i = 0; i < n; ++i) {
    w0[i] = static_cast<float>(std::sin(0.001 * i));
    for (int t = 0; t < 3; ++t) grads[t][i] = static_cast<float>(std::cos(0.003 * i + t) * (t == 1 ? 3.0 : 0.5));
  }
  for (bool amsgrad : {false, true}) {
    Variable v(Tensor::from_vector<float>(w0, {n}), "big");
    auto o = opt::AdamW({.learning_rate = 0.01, .amsgrad = amsgrad, .weight_decay = 0.1, .clipvalue = 1.0});
    for (const auto& g : grads) o->apply({Tensor::from_vector<float>(g, {n})}, {v});
    const auto got = v.value().to_vector<float>();
    Rule rule = adam_rule(0.01, 0.9, 0.999, 1e-7, amsgrad, 0.1);
    for (int64_t i = 0; i < n; ++i) {
      double w = w0[i];
      std::vector<double> state(3, 0.0);
      for (int t = 1; t <= 3; ++t) w = rule(w, std::clamp<double>(grads[t - 1][i], -1.0, 1.0), state, t);
      ASSERT_NEAR(got[i], w, 1e-5 * std::max(1.0, std::abs(w))) << "element " << i << " amsgrad " << amsgrad;
    }
  }
}

// ---- clipping, decay, loss scale ----

TEST(Optimizers, Clipping) {
  const Vec ga = {3, 4}, gb = {0.3, -0.4};  // norms 5 and 0.5
  auto step = [&](const opt::OptimizerPtr& o) {
    Variable a = var64({0, 0}, "a"), b = var64({0, 0}, "b");
    o->apply({t64(ga), t64(gb)}, {a, b});
    Vec out = values(a);
    for (double x : values(b)) out.push_back(x);
    return out;  // = -lr * clipped grads (lr 1)
  };
  // clipnorm 1: each gradient separately scaled to norm <= 1.
  expect_close(step(opt::SGD({.learning_rate = 1.0, .clipnorm = 1.0})), {-0.6, -0.8, -0.3, 0.4}, 1e-6, "clipnorm");
  // global_clipnorm 1: both scaled by 1/sqrt(25.25).
  double s = 1.0 / std::sqrt(25.25);
  expect_close(step(opt::SGD({.learning_rate = 1.0, .global_clipnorm = 1.0})),
               {-3 * s, -4 * s, -0.3 * s, 0.4 * s}, 1e-6, "global_clipnorm");
  expect_close(step(opt::SGD({.learning_rate = 1.0, .global_clipnorm = 100.0})), {-3, -4, -0.3, 0.4}, 1e-6,
               "global_clipnorm inactive");
  expect_close(step(opt::SGD({.learning_rate = 1.0, .clipvalue = 0.35})), {-0.35, -0.35, -0.3, 0.35}, 1e-6,
               "clipvalue");
  // loss_scale_factor divides first; clipnorm then sees the unscaled norm (5/10 < 1: no clip).
  expect_close(step(opt::SGD({.learning_rate = 1.0, .clipnorm = 1.0, .loss_scale_factor = 10.0})),
               {-0.3, -0.4, -0.03, 0.04}, 1e-6, "loss scale");
  EXPECT_THROW(opt::SGD({.clipnorm = 1.0, .global_clipnorm = 1.0}), ValueError);
  EXPECT_THROW(opt::Adam({.clipnorm = 1.0, .clipvalue = 1.0}), ValueError);
}

TEST(Optimizers, WeightDecayAndExclusion) {
  auto o = opt::SGD({.learning_rate = 0.1, .weight_decay = 0.2});
  o->exclude_from_weight_decay({"bias"});
  Variable k = var64({1.0, -2.0}, "dense/kernel"), b = var64({1.0, -2.0}, "dense/bias");
  o->apply({t64({0.5, 0.5}), t64({0.5, 0.5})}, {k, b});
  // Keras: var -= var * wd * lr before the rule.
  expect_close(values(k), {1.0 - 1.0 * 0.02 - 0.05, -2.0 + 2.0 * 0.02 - 0.05});
  expect_close(values(b), {1.0 - 0.05, -2.0 - 0.05});
  EXPECT_THROW(o->exclude_from_weight_decay({"kernel"}), StateError);
  EXPECT_THROW(opt::SGD()->exclude_from_weight_decay({"("}), ValueError);
}

// ---- schedules ----

TEST(Schedules, Values) {
  sched::ExponentialDecay e(0.1, 10, 0.5);
  sched::ExponentialDecay es(0.1, 10, 0.5, true);
  for (int64_t s : {0, 1, 5, 10, 15, 25}) {
    EXPECT_NEAR(e(s), 0.1 * std::pow(0.5, s / 10.0), 1e-12) << s;
    EXPECT_NEAR(es(s), 0.1 * std::pow(0.5, std::floor(s / 10.0)), 1e-12) << s;
  }
  sched::PiecewiseConstantDecay p({10, 20}, {1.0, 0.5, 0.1});
  EXPECT_EQ(p(0), 1.0);
  EXPECT_EQ(p(10), 1.0);
  EXPECT_EQ(p(11), 0.5);
  EXPECT_EQ(p(20), 0.5);
  EXPECT_EQ(p(21), 0.1);
  EXPECT_THROW(sched::PiecewiseConstantDecay({10}, {1.0}), ValueError);
  const double pi = std::acos(-1.0);
  sched::CosineDecay c(0.1, 100, 0.1);
  for (int64_t s : {0, 25, 50, 100, 150}) {
    double f = std::min<double>(s, 100) / 100.0;
    EXPECT_NEAR(c(s), 0.1 * (0.9 * 0.5 * (1 + std::cos(pi * f)) + 0.1), 1e-12) << s;
  }
  sched::CosineDecay w(0.0, 100, 0.0, "CosineDecay", 1.0, 10);
  EXPECT_NEAR(w(0), 0.0, 1e-12);
  EXPECT_NEAR(w(5), 0.5, 1e-12);
  EXPECT_NEAR(w(10), 1.0, 1e-12);
  EXPECT_NEAR(w(60), 0.5 * (1 + std::cos(pi * 0.5)), 1e-12);
  EXPECT_NEAR(w(500), 0.0, 1e-12);
}

TEST(Schedules, DriveTheOptimizerAndSerialize) {
  auto schedule = std::make_shared<sched::ExponentialDecay>(0.1, 1, 0.5);
  auto o = opt::SGD({.learning_rate = schedule});
  Variable v = var64({0.0});
  for (int i = 0; i < 3; ++i) o->apply({t64({1.0})}, {v});
  expect_close(values(v), {-(0.1 + 0.05 + 0.025)});  // steps 0, 1, 2 of the schedule
  EXPECT_NEAR(o->learning_rate(), 0.0125, 1e-12);
  EXPECT_THROW(o->set_learning_rate(0.5), TypeError);
  // Schedule optimizers hold no learning_rate variable, as Keras.
  EXPECT_EQ(names(o->variables()), (std::vector<std::string>{"iteration"}));
  for (const sched::LearningRateSchedule* s :
       std::initializer_list<const sched::LearningRateSchedule*>{
           schedule.get(), new sched::PiecewiseConstantDecay({10, 20}, {1.0, 0.5, 0.1}),
           new sched::CosineDecay(0.1, 100, 0.1, "cos", 1.0, 10)}) {
    nlohmann::json j = sched::serialize(*s);
    EXPECT_EQ(j["module"], "keras.optimizers.schedules");
    auto back = sched::deserialize(j);
    EXPECT_EQ(sched::serialize(*back), j);
    for (int64_t step : {0, 7, 15, 33}) EXPECT_DOUBLE_EQ((*back)(step), (*s)(step));
    if (s != schedule.get()) delete s;
  }
  EXPECT_THROW(sched::deserialize({{"class_name", "NoSuchDecay"}, {"config", nlohmann::json::object()}}), ValueError);
}

// ---- state: slots, frozen variables, rebuilds ----

TEST(OptimizerState, SlotNamesAndKerasOrder) {
  Variable k = var64({1, 2}, "dense/kernel"), b = var64({0}, "dense/bias");
  auto adam = opt::Adam({.amsgrad = true});
  adam->build({k, b});
  EXPECT_EQ(names(adam->variables()),
            (std::vector<std::string>{"iteration", "learning_rate", "dense_kernel_momentum", "dense_kernel_velocity",
                                      "dense_bias_momentum", "dense_bias_velocity", "dense_kernel_velocity_hat",
                                      "dense_bias_velocity_hat"}));
  EXPECT_EQ(adam->variables()[2].path(), "adam/dense_kernel_momentum");
  auto rms = opt::RMSprop({.momentum = 0.9, .centered = true});
  rms->build({k, b});
  EXPECT_EQ(names(rms->variables()),
            (std::vector<std::string>{"iteration", "learning_rate", "dense_kernel_velocity", "dense_bias_velocity",
                                      "dense_kernel_momentum", "dense_bias_momentum", "dense_kernel_average_gradient",
                                      "dense_bias_average_gradient"}));
  auto sgd = opt::SGD({.momentum = 0.9});
  sgd->build({k, b});
  EXPECT_EQ(names(sgd->variables()), (std::vector<std::string>{"iteration", "learning_rate", "dense_kernel_momentum",
                                                                "dense_bias_momentum"}));
  EXPECT_EQ(names(opt::SGD()->variables()), (std::vector<std::string>{"iteration", "learning_rate"}));
  auto ada = opt::Adagrad();
  ada->build({k});
  expect_close(values(ada->slot("dense/kernel", "accumulator")), {0.1, 0.1});
  EXPECT_THROW(ada->slot("dense/kernel", "momentum"), ValueError);
}

TEST(OptimizerState, FrozenVariablesUntouched) {
  Variable w = var64({1.0, 2.0}, "w"), frozen = var64({3.0, 4.0}, "frozen", false);
  auto o = opt::Adam({.learning_rate = 0.1, .weight_decay = 0.1});
  o->apply({t64({1.0, 1.0}), Tensor()}, {w, frozen});
  o->apply({t64({1.0, 1.0}), t64({1.0, 1.0})}, {w, frozen});  // a gradient on a frozen weight is ignored too
  EXPECT_EQ(values(frozen), (Vec{3.0, 4.0}));
  EXPECT_NE(values(w), (Vec{1.0, 2.0}));
  EXPECT_EQ(o->built_paths(), (std::vector<std::string>{"w"}));
  EXPECT_EQ(o->variables().size(), 4u);  // iteration, learning_rate, w's momentum and velocity
}

TEST(OptimizerState, RebuildAfterTrainabilityChangeAndReset) {
  Variable a = var64({1.0}, "a"), b = var64({1.0}, "b", false);
  auto o = opt::SGD({.learning_rate = 0.1, .momentum = 0.5});
  o->apply({t64({1.0}), Tensor()}, {a, b});
  b.set_trainable(true);
  EXPECT_THROW(o->apply({t64({1.0}), t64({1.0})}, {a, b}), ValueError);  // b unknown until rebuilt
  o->build({a, b});
  expect_close(values(o->slot("a", "momentum")), {-0.1});  // a keeps its state
  expect_close(values(o->slot("b", "momentum")), {0.0});
  o->apply({t64({1.0}), t64({1.0})}, {a, b});
  expect_close(values(a), {1.0 - 0.1 + (0.5 * -0.1 - 0.1)});
  expect_close(values(b), {0.9});
  EXPECT_EQ(o->iterations(), 2);
  o->reset();
  EXPECT_FALSE(o->built());
  EXPECT_EQ(o->iterations(), 0);
  EXPECT_EQ(o->variables().size(), 2u);
}

TEST(OptimizerState, LearningRateAccessors) {
  auto o = opt::Adam({.learning_rate = 0.01});
  EXPECT_NEAR(o->learning_rate(), 0.01, 1e-9);
  o->set_learning_rate(0.5);
  EXPECT_NEAR(o->learning_rate(), 0.5, 1e-9);
  EXPECT_EQ(o->get_config()["learning_rate"].get<double>(), 0.5);
}

// ---- config and registry ----

TEST(OptimizerConfig, RoundTripAndRegistry) {
  std::vector<opt::OptimizerPtr> all = {
      opt::SGD({.learning_rate = 0.05, .momentum = 0.9, .nesterov = true, .clipnorm = 2.0}),
      opt::Adam({.beta_1 = 0.8, .amsgrad = true, .global_clipnorm = 1.0, .name = "my_adam"}),
      opt::AdamW({.weight_decay = 0.01}),
      opt::RMSprop({.rho = 0.8, .momentum = 0.1, .centered = true, .clipvalue = 0.5}),
      opt::Adagrad({.initial_accumulator_value = 0.2}),
      opt::Adam({.learning_rate = std::make_shared<sched::CosineDecay>(0.1, 1000)}),
  };
  for (const auto& o : all) {
    nlohmann::json j = opt::serialize(*o);
    EXPECT_EQ(j["module"], "keras.optimizers");
    for (const char* key : {"name", "learning_rate", "weight_decay", "clipnorm", "global_clipnorm", "clipvalue",
                            "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                            "gradient_accumulation_steps"})
      EXPECT_TRUE(j["config"].contains(key)) << o->class_name() << " " << key;
    auto back = opt::from_config(j);
    EXPECT_EQ(back->class_name(), o->class_name());
    EXPECT_EQ(back->get_config(), o->get_config()) << j.dump();
  }
  EXPECT_EQ(opt::get("adam")->class_name(), "Adam");
  EXPECT_EQ(opt::get("SGD")->get_config()["learning_rate"].get<float>(), 0.01f);
  EXPECT_EQ(opt::get("rmsprop")->name(), "rmsprop");
  EXPECT_EQ(opt::get("AdamW")->weight_decay(), 0.004);
  EXPECT_EQ(opt::from_config(nlohmann::json("adagrad"))->class_name(), "Adagrad");
  // tf.keras 2.11+ form with its extra keys.
  nlohmann::json k2 = {{"class_name", "Custom>Adam"},
                       {"config",
                        {{"name", "Adam"}, {"learning_rate", 0.002}, {"decay", 0.0}, {"beta_1", 0.85},
                         {"is_legacy_optimizer", false}, {"jit_compile", true}, {"use_ema", false}}}};
  auto legacy = opt::from_config(k2);
  EXPECT_NEAR(legacy->learning_rate(), 0.002, 1e-9);
  EXPECT_EQ(std::dynamic_pointer_cast<opt::AdamImpl>(legacy)->beta_1(), 0.85);
}

// ---- errors ----

TEST(OptimizerErrors, MessagesNameTheProblem) {
  try {
    opt::get("adamax");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    std::string m = e.what();
    for (const char* n : {"adamax", "Adam", "AdamW", "SGD", "RMSprop", "Adagrad"})
      EXPECT_NE(m.find(n), std::string::npos) << m;
  }
  auto o = opt::Adam();
  Variable v = var64({1, 2, 3}, "block/conv/kernel");
  try {
    o->apply({t64({1, 2})}, {v});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("block/conv/kernel"), std::string::npos) << e.what();
  }
  EXPECT_THROW(o->apply({t64({1, 2, 3})}, {}), ValueError);      // length mismatch
  EXPECT_THROW(o->apply({Tensor()}, {v}), ValueError);           // no gradient at all
  EXPECT_THROW(o->build({v, var64({1}, "block/conv/kernel")}), ValueError);  // duplicate path
  EXPECT_THROW(opt::SGD({.momentum = 1.5}), ValueError);
  EXPECT_THROW(opt::Adam({.use_ema = true}), NotImplementedError);
  o->apply({}, {});  // empty: a no-op
  EXPECT_EQ(o->iterations(), 0);
}
