// Weight constraints: values against direct double-precision computations, configs in Keras 2/3
// forms, and their application right after every optimizer update (fit and optimizer->apply).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "keras/keras.h"
#include "support/layer_harness.h"

using namespace keras;
namespace C = keras::constraints;
namespace L = keras::layers;

namespace {

using Vec = std::vector<double>;

Vec values(const Tensor& t) {
  Vec out;
  for (float v : t.contiguous().to_vector<float>()) out.push_back(v);
  return out;
}

void expect_close(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " [" << i << "]";
}

// Row-major flat index -> multi-index of `shape`.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

// The L2 norm of each element's group (the elements that agree off the reduced axes), in double.
Vec ref_norms(const Vec& w, const Shape& shape, const std::vector<int64_t>& reduced) {
  auto key = [&](int64_t i) {
    auto idx = unravel(i, shape);
    for (int64_t a : reduced) idx[a] = 0;
    return idx;
  };
  Vec out(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    double s = 0;
    for (size_t j = 0; j < w.size(); ++j)
      if (key(static_cast<int64_t>(j)) == key(static_cast<int64_t>(i))) s += w[j] * w[j];
    out[i] = std::sqrt(s);
  }
  return out;
}

// Keras's formulas, in double: w * desired(norm) / (1e-7 + norm).
Vec ref_scaled(const Vec& w, const Shape& shape, const std::vector<int64_t>& reduced,
               const std::function<double(double)>& desired) {
  Vec n = ref_norms(w, shape, reduced), out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = w[i] * desired(n[i]) / (1e-7 + n[i]);
  return out;
}
Vec ref_max_norm(const Vec& w, const Shape& s, const std::vector<int64_t>& r, double m) {
  return ref_scaled(w, s, r, [m](double n) { return std::clamp(n, 0.0, m); });
}
Vec ref_min_max_norm(const Vec& w, const Shape& s, const std::vector<int64_t>& r, double lo, double hi, double rate) {
  return ref_scaled(w, s, r, [=](double n) { return rate * std::clamp(n, lo, hi) + (1 - rate) * n; });
}

Tensor weight(const Shape& shape, uint64_t seed, double stddev = 1.5) { return random::normal(shape, 0, stddev, seed); }

// A constraint that remembers whether the tape was recording when it ran.
class Recorder : public Constraint {
 public:
  Tensor operator()(const Tensor& w) const override {
    ++calls;
    recording_seen = recording_seen || grad_recording();
    return ops::multiply(w, 0.5);
  }
  std::string class_name() const override { return "Recorder"; }
  mutable int calls = 0;
  mutable bool recording_seen = false;
};

// Column (last-axis) L2 norms of a kernel whose other axes are reduced.
Vec output_norms(const Tensor& kernel) {
  Shape s = kernel.shape();
  std::vector<int64_t> reduced;
  for (int64_t a = 0; a + 1 < static_cast<int64_t>(s.size()); ++a) reduced.push_back(a);
  Vec n = ref_norms(values(kernel), s, reduced);
  return Vec(n.end() - s.back(), n.end());  // the last s.back() elements cover every column
}

}  // namespace

// ---- values ----

TEST(Constraints, MaxNormMatchesKerasFormula) {
  Tensor w = weight({3, 4}, 1);
  Vec wv = values(w);
  expect_close(values(C::MaxNorm()(w)), ref_max_norm(wv, {3, 4}, {0}, 2.0), 1e-6, "default axis 0, max 2");
  expect_close(values(C::MaxNorm(1.0, 1)(w)), ref_max_norm(wv, {3, 4}, {1}, 1.0), 1e-6, "axis 1");
  expect_close(values(C::MaxNorm(1.0, -1)(w)), ref_max_norm(wv, {3, 4}, {1}, 1.0), 1e-6, "axis -1");
  Tensor k = weight({2, 2, 3, 4}, 2);
  expect_close(values(C::MaxNorm(1.5, {0, 1, 2})(k)), ref_max_norm(values(k), {2, 2, 3, 4}, {0, 1, 2}, 1.5), 1e-6,
               "conv kernel axis [0, 1, 2]");
  expect_close(values(C::MaxNorm(3.0, nullptr)(k)), ref_max_norm(values(k), {2, 2, 3, 4}, {0, 1, 2, 3}, 3.0), 1e-6,
               "axis None: one norm");
  // Norms under the limit stay (up to the epsilon): 1 / (1 + 1e-7) of the value.
  Tensor small = Tensor::from_vector(std::vector<float>{0.3f, 0.4f}, {2, 1});
  expect_close(values(C::MaxNorm(2.0)(small)), {0.3 / (1 + 2e-7), 0.4 / (1 + 2e-7)}, 1e-7, "under the limit");
  EXPECT_THROW(C::MaxNorm(-1.0), ValueError);
  EXPECT_THROW(C::MaxNorm(1.0, 2)(w), ValueError);  // axis out of range for rank 2
}

TEST(Constraints, UnitNormUsesKerasEpsilon) {
  Tensor w = weight({3, 4}, 3);
  expect_close(values(C::UnitNorm()(w)), ref_scaled(values(w), {3, 4}, {0}, [](double) { return 1.0; }), 1e-6, "axis 0");
  expect_close(values(C::UnitNorm(1)(w)), ref_scaled(values(w), {3, 4}, {1}, [](double) { return 1.0; }), 1e-6, "axis 1");
  // With a norm of 5e-7 the epsilon is visible: w / (1e-7 + 5e-7).
  Tensor tiny = Tensor::from_vector(std::vector<float>{3e-7f, 4e-7f}, {2});
  expect_close(values(C::UnitNorm()(tiny)), {0.5, 4.0 / 6.0}, 1e-5, "epsilon");
  // A zero vector stays zero (no division by zero).
  expect_close(values(C::UnitNorm()(Tensor::zeros({3, 2}))), Vec(6, 0.0), 0, "zero");
}

TEST(Constraints, MinMaxNormAndNonNeg) {
  Tensor w = weight({4, 3}, 4);
  Vec wv = values(w);
  expect_close(values(C::MinMaxNorm()(w)), ref_min_max_norm(wv, {4, 3}, {0}, 0.0, 1.0, 1.0), 1e-6, "defaults");
  expect_close(values(C::MinMaxNorm(1.0, 2.0, 0.5, 1)(w)), ref_min_max_norm(wv, {4, 3}, {1}, 1.0, 2.0, 0.5), 1e-6,
               "rate 0.5, axis 1");
  Tensor small = weight({4, 3}, 5, 0.05);  // norms below min_value are raised
  expect_close(values(C::MinMaxNorm(0.5, 2.0, 1.0, {0})(small)),
               ref_min_max_norm(values(small), {4, 3}, {0}, 0.5, 2.0, 1.0), 1e-6, "raised to min_value");
  EXPECT_THROW(C::MinMaxNorm(2.0, 1.0), ValueError);

  Tensor v = Tensor::from_vector(std::vector<float>{-1.5f, 0.0f, 2.0f, -0.0f, 3.0f});
  expect_close(values(C::NonNeg()(v)), {0, 0, 2, 0, 3}, 0, "non_neg");
  // The identity base class, as Keras's Constraint.
  expect_close(values(Constraint()(v)), values(v), 0, "identity");
}

// ---- configs ----

TEST(Constraints, ConfigsInKerasForms) {
  EXPECT_EQ(C::MaxNorm().get_config(), json::parse(R"({"max_value": 2, "axis": 0})"));
  EXPECT_EQ(C::UnitNorm({0, 1, 2}).get_config(), json::parse(R"({"axis": [0, 1, 2]})"));
  EXPECT_EQ(C::MinMaxNorm().get_config(), json::parse(R"({"min_value": 0.0, "max_value": 1.0, "rate": 1.0, "axis": 0})"));
  EXPECT_EQ(C::NonNeg().get_config(), json::object());
  // Keras 3's own serialization of MaxNorm(): the object form, read and written back equal.
  json keras3 = json::parse(
      R"({"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 2, "axis": 0}, "registered_name": null})");
  EXPECT_EQ(C::serialize(C::from_config(keras3)), keras3);

  std::vector<ConstraintPtr> all{std::make_shared<C::MaxNorm>(3.0, C::Axis({0, 1})), std::make_shared<C::NonNeg>(),
                                 std::make_shared<C::UnitNorm>(-1),
                                 std::make_shared<C::MinMaxNorm>(0.5, 1.5, 0.25, C::Axis(nullptr))};
  for (const auto& c : all) {
    json j = C::serialize(c);
    EXPECT_EQ(j["module"], "keras.constraints");
    EXPECT_EQ(j["class_name"], c->class_name());
    EXPECT_TRUE(j["registered_name"].is_null());
    ConstraintPtr back = C::from_config(json::parse(j.dump()));  // Keras 3 object
    EXPECT_EQ(back->class_name(), c->class_name());
    EXPECT_EQ(back->get_config(), c->get_config());
    json keras2 = {{"class_name", c->class_name()}, {"config", c->get_config()}};  // Keras 2 object
    EXPECT_EQ(C::serialize(C::from_config(keras2)), j);
  }
  // Bare strings: class names, snake aliases and Keras 2's legacy aliases.
  for (auto [name, cls] : std::vector<std::pair<std::string, std::string>>{
           {"max_norm", "MaxNorm"}, {"non_neg", "NonNeg"}, {"unit_norm", "UnitNorm"}, {"min_max_norm", "MinMaxNorm"},
           {"MaxNorm", "MaxNorm"}, {"maxnorm", "MaxNorm"}, {"nonneg", "NonNeg"}, {"unitnorm", "UnitNorm"}}) {
    EXPECT_EQ(C::from_config(json(name))->class_name(), cls) << name;
    EXPECT_EQ(C::get(name)->class_name(), cls) << name;
  }
  // Missing keys take Keras's defaults.
  EXPECT_EQ(C::from_config(json::parse(R"({"class_name": "MaxNorm", "config": {}})"))->get_config(),
            C::MaxNorm().get_config());
  EXPECT_EQ(C::from_config(nullptr), nullptr);
  EXPECT_EQ(C::serialize(nullptr), json(nullptr));
  EXPECT_THROW(C::from_config(json::parse(R"({"class_name": "MaxNorm", "config": {"axis": "rows"}})")), ValueError);
  EXPECT_THROW(C::from_config(json::parse(R"({"class_name": "MaxNorm", "config": {"max_value": "big"}})")), ValueError);
  EXPECT_THROW(C::from_config(json(3)), ValueError);
}

TEST(Constraints, UnknownNameListsKnownOnes) {
  for (const json& j : {json("max_nrom"), json::parse(R"({"class_name": "RadialConstraint", "config": {}})")}) {
    try {
      C::from_config(j);
      FAIL() << "accepted " << j.dump();
    } catch (const ValueError& e) {
      std::string msg = e.what();
      for (const char* known : {"max_norm", "non_neg", "unit_norm", "min_max_norm", "MaxNorm"})
        EXPECT_NE(msg.find(known), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(L::Dense({.units = 2, .kernel_constraint = "no_such_constraint"}), ValueError);
  EXPECT_THROW(layer_from_config("Dense", json::parse(R"({"units": 2, "kernel_constraint": "nope"})")), ValueError);
}

TEST(Constraints, LayerConfigsRoundTrip) {
  L::Dense d({.units = 3, .kernel_constraint = "max_norm", .bias_constraint = std::make_shared<C::NonNeg>()});
  json c = d->get_config();
  EXPECT_EQ(c["kernel_constraint"], C::serialize(std::make_shared<C::MaxNorm>()));
  EXPECT_EQ(c["bias_constraint"]["class_name"], "NonNeg");
  // A Keras 2 layer config (plain {"class_name", "config"} objects) loads and writes Keras 3 objects.
  LayerPtr k2 = layer_from_config("Conv2D", json::parse(R"({"filters": 2, "kernel_size": [3, 3],
      "kernel_constraint": {"class_name": "MaxNorm", "config": {"max_value": 1.5, "axis": [0, 1, 2]}},
      "bias_constraint": null})"));
  json k2c = k2->get_config();
  EXPECT_EQ(k2c["kernel_constraint"]["module"], "keras.constraints");
  EXPECT_EQ(k2c["kernel_constraint"]["config"], json::parse(R"({"max_value": 1.5, "axis": [0, 1, 2]})"));
  EXPECT_TRUE(k2c["bias_constraint"].is_null());

  // The full harness (shapes, config and weight round trips, training, frozen) with constraints.
  using keras::testing::run_layer_harness;
  run_layer_harness({.name = "Dense with constraints",
                     .make = [] { return LayerPtr(L::Dense({.units = 3, .kernel_constraint = "max_norm",
                                                            .bias_constraint = "non_neg"})); },
                     .input_shape = {2, 4},
                     .weight_shapes = {{4, 3}, {3}}});
  run_layer_harness({.name = "Conv2D with constraints",
                     .make = [] {
                       return LayerPtr(L::Conv2D({.filters = 2, .kernel_size = 3,
                                                  .kernel_constraint = std::make_shared<C::MaxNorm>(1.0, C::Axis({0, 1, 2})),
                                                  .bias_constraint = "unit_norm"}));
                     },
                     .input_shape = {2, 5, 5, 3},
                     .weight_shapes = {{3, 3, 3, 2}, {2}},
                     .gradcheck_input_shape = {1, 4, 4, 3}});
  run_layer_harness({.name = "BatchNormalization with constraints",
                     .make = [] { return LayerPtr(L::BatchNormalization({.beta_constraint = "non_neg",
                                                                         .gamma_constraint = "min_max_norm"})); },
                     .input_shape = {4, 3},
                     .weight_shapes = {{3}, {3}, {3}, {3}},
                     .trainable_count = 2});
  run_layer_harness({.name = "LayerNormalization with constraints",
                     .make = [] { return LayerPtr(L::LayerNormalization({.beta_constraint = "max_norm",
                                                                         .gamma_constraint = "non_neg"})); },
                     .input_shape = {2, 4},
                     .weight_shapes = {{4}, {4}}});
}

// ---- application after optimizer updates ----

TEST(Constraints, AppliedAfterSGDThroughApply) {
  Tensor w0 = Tensor::from_vector(std::vector<float>{1.0f, 2.0f, -0.5f, 0.25f, 3.0f, -1.0f}, {3, 2});
  Tensor g = Tensor::from_vector(std::vector<float>{0.5f, -1.0f, 0.25f, 2.0f, -1.5f, 0.75f}, {3, 2});
  Vec stepped = values(w0), gv = values(g);
  Variable var(w0, "layer/kernel");  // takes w0's storage over
  var.set_constraint([c = C::MaxNorm(1.0)](const Tensor& w) { return c(w); });
  auto sgd = optimizers::SGD({.learning_rate = 0.1});
  sgd->apply({g}, {var});
  for (size_t i = 0; i < stepped.size(); ++i) stepped[i] -= 0.1 * gv[i];
  expect_close(values(var.value()), ref_max_norm(stepped, {3, 2}, {0}, 1.0), 1e-6, "SGD then MaxNorm");
  EXPECT_TRUE(var.value().requires_grad());
  EXPECT_EQ(var.value().grad_fn(), nullptr);  // still a leaf
}

TEST(Constraints, AppliedAfterEachAdamStep) {
  Vec w{0.6, -0.8, 1.2, 0.4, -0.3, 0.9};
  Variable var(Tensor::from_vector(std::vector<float>(w.begin(), w.end()), {2, 3}), "layer/kernel");
  var.set_constraint([c = C::MinMaxNorm(0.2, 1.0, 0.7, 1)](const Tensor& x) { return c(x); });
  auto adam = optimizers::Adam({.learning_rate = 0.05});
  Vec m(6, 0), v(6, 0);
  for (int t = 1; t <= 3; ++t) {
    Vec g;
    for (size_t i = 0; i < 6; ++i) g.push_back(std::sin(1.0 + i + 2.0 * t));
    adam->apply({Tensor::from_vector(std::vector<float>(g.begin(), g.end()), {2, 3})}, {var});
    // Keras 3's Adam rule, then the constraint on the updated value.
    double alpha = 0.05 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    for (size_t i = 0; i < 6; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      w[i] -= alpha * m[i] / (std::sqrt(v[i]) + 1e-7);
    }
    w = ref_min_max_norm(w, {2, 3}, {1}, 0.2, 1.0, 0.7);
    expect_close(values(var.value()), w, 1e-5, "Adam step " + std::to_string(t));
  }
}

TEST(Constraints, OnlyUpdatedVariablesAndNeverOnTheTape) {
  auto rec = std::make_shared<Recorder>();
  auto hook = [rec](const Tensor& w) { return (*rec)(w); };
  Variable updated(Tensor::ones({2}), "a/w"), no_grad(Tensor::ones({2}), "b/w"), frozen(Tensor::ones({2}), "c/w", false);
  for (Variable* v : {&updated, &no_grad, &frozen}) v->set_constraint(hook);
  auto sgd = optimizers::SGD({.learning_rate = 0.5});
  {
    GradientTape tape;  // a custom loop applying inside an active tape
    sgd->apply({Tensor::ones({2}), Tensor(), Tensor::ones({2})}, {updated, no_grad, frozen});
  }
  EXPECT_EQ(rec->calls, 1);
  EXPECT_FALSE(rec->recording_seen);
  expect_close(values(updated.value()), {0.25, 0.25}, 1e-7, "(1 - 0.5) * 0.5");
  expect_close(values(no_grad.value()), {1, 1}, 0, "no gradient: untouched");
  expect_close(values(frozen.value()), {1, 1}, 0, "frozen: untouched");
  // A constraint that changes the shape is refused, naming the variable.
  Variable bad(Tensor::ones({2}), "d/w");
  bad.set_constraint([](const Tensor&) { return Tensor::ones({3}); });
  try {
    bad.apply_constraint();
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("d/w"), std::string::npos) << e.what();
  }
}

TEST(Constraints, EveryConstrainedWeightOfEachLayerIsAttached) {
  auto attached = [](const LayerPtr& layer, const Shape& in) {
    (*layer)(Tensor::ones(in));
    std::vector<bool> out;
    for (const auto& w : layer->weights()) out.push_back(w.has_constraint());
    return out;
  };
  using B = std::vector<bool>;
  EXPECT_EQ(attached(L::Dense({.units = 2, .bias_constraint = "non_neg"}), {1, 3}), (B{false, true}));
  EXPECT_EQ(attached(L::Conv1D({.filters = 2, .kernel_size = 2, .kernel_constraint = "non_neg"}), {1, 4, 3}),
            (B{true, false}));
  EXPECT_EQ(attached(L::Conv2DTranspose({.filters = 2, .kernel_size = 2, .kernel_constraint = "non_neg",
                                         .bias_constraint = "non_neg"}),
                     {1, 3, 3, 2}),
            (B{true, true}));
  EXPECT_EQ(attached(L::DepthwiseConv2D({.kernel_size = 2, .depthwise_constraint = "unit_norm"}), {1, 3, 3, 2}),
            (B{true, false}));
  EXPECT_EQ(attached(L::SeparableConv2D({.filters = 2, .kernel_size = 2, .depthwise_constraint = "non_neg",
                                         .pointwise_constraint = "max_norm", .bias_constraint = "non_neg"}),
                     {1, 3, 3, 2}),
            (B{true, true, true}));
  EXPECT_EQ(attached(L::BatchNormalization({.gamma_constraint = "non_neg"}), {2, 3}), (B{true, false, false, false}));
  EXPECT_EQ(attached(L::LayerNormalization({.beta_constraint = "non_neg"}), {2, 3}), (B{false, true}));
}

// ---- through fit ----

TEST(Constraints, FitKeepsDenseAndConv2DKernelNormsBounded) {
  set_random_seed(7);
  Tensor x = random::normal({32, 6, 6, 2}, 0, 1, uint64_t{1});
  Tensor y = ops::multiply(random::normal({32, 3}, 0, 1, uint64_t{2}), 20.0);  // large targets grow the weights
  for (const char* opt : {"sgd", "adam"}) {
    auto model = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
        L::Input({6, 6, 2}), L::Conv2D({.filters = 4, .kernel_size = 3, .activation = "relu",
                                        .kernel_constraint = std::make_shared<C::MaxNorm>(0.5, C::Axis({0, 1, 2}))}),
        L::Flatten(), L::Dense({.units = 3, .kernel_constraint = std::make_shared<C::MaxNorm>(0.5)})});
    model->compile({.optimizer = std::string(opt) == "sgd" ? optimizers::OptimizerPtr(optimizers::SGD({.learning_rate = 0.05}))
                                                            : optimizers::OptimizerPtr(optimizers::Adam({.learning_rate = 0.05})),
                    .loss = "mse"});
    model->fit(x, y, {.batch_size = 8, .epochs = 3, .verbose = 0});
    for (size_t li : {size_t{0}, size_t{2}}) {
      Tensor kernel = model->layers()[li]->weights()[0].value();
      Vec norms = output_norms(kernel);
      double largest = *std::max_element(norms.begin(), norms.end());
      EXPECT_LE(largest, 0.5 + 1e-5) << opt << " layer " << li;
      EXPECT_GT(largest, 0.49) << opt << " layer " << li << ": the constraint never bound, the test proves nothing";
    }
  }
}

TEST(Constraints, FitLeavesFrozenConstrainedLayerUntouched) {
  auto frozen = L::Dense({.units = 3, .kernel_initializer = "ones", .kernel_constraint = std::make_shared<C::MaxNorm>(0.1)});
  auto model = std::make_shared<Sequential>(
      std::initializer_list<SequentialEntry>{L::Input({4}), frozen, L::Dense({.units = 1})});
  frozen->set_trainable(false);
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  TensorList before = frozen->get_weights();
  model->fit(random::normal({16, 4}, 0, 1, uint64_t{3}), random::normal({16, 1}, 0, 1, uint64_t{4}),
             {.batch_size = 4, .epochs = 2, .verbose = 0});
  EXPECT_TRUE(keras::testing::harness_detail::all_bit_equal(frozen->get_weights(), before));
  // Unfrozen, the next step projects the all-ones kernel (column norms 2) down to norm 0.1.
  frozen->set_trainable(true);
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  model->fit(random::normal({4, 4}, 0, 1, uint64_t{5}), random::normal({4, 1}, 0, 1, uint64_t{6}),
             {.batch_size = 4, .epochs = 1, .verbose = 0});
  for (double n : output_norms(frozen->kernel().value())) EXPECT_NEAR(n, 0.1, 1e-5);
}
