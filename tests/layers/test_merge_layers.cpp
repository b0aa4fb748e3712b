// Merge layers (Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, Dot), shared
// layers in a functional graph, and operators on KerasTensors (OpLayer).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "keras/models/model.h"
#include "layers/concatenate.h"
#include "layers/dense.h"
#include "layers/dot.h"
#include "layers/elementwise_merge.h"
#include "layers/keras_tensor_ops.h"
#include "layers/layer_registry.h"
#include "layers/op_layer.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::run_layer_harness;

namespace {
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Tensor mat(std::vector<float> v, Shape s) { return Tensor::from_vector(v, s); }

void expect_values(const Tensor& t, const std::vector<float>& want, const Shape& shape, double tol = 1e-5) {
  ASSERT_EQ(shape_str(t.shape()), shape_str(shape));
  auto got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

template <class Handle>
LayerPtr make_merge() {
  return LayerPtr(Handle());
}
}  // namespace

// ---------------- the harness over every merge layer ----------------

TEST(MergeHarness, ElementwiseMerges) {
  struct Case {
    const char* name;
    std::function<LayerPtr()> make;
  };
  std::vector<Case> cases = {{"Add", make_merge<layers::Add>},           {"Subtract", make_merge<layers::Subtract>},
                             {"Multiply", make_merge<layers::Multiply>}, {"Average", make_merge<layers::Average>},
                             {"Maximum", make_merge<layers::Maximum>},   {"Minimum", make_merge<layers::Minimum>}};
  for (const auto& c : cases)
    run_layer_harness({.name = c.name, .make = c.make, .weight_shapes = {}, .input_shapes = {{3, 4}, {3, 4}}});
}

TEST(MergeHarness, ThreeInputsAndBroadcasting) {
  run_layer_harness({.name = "Add x3", .make = make_merge<layers::Add>, .weight_shapes = {},
                     .input_shapes = {{2, 3}, {2, 3}, {2, 3}}});
  run_layer_harness({.name = "Multiply broadcast", .make = make_merge<layers::Multiply>, .weight_shapes = {},
                     .input_shapes = {{2, 3}, {2, 1}}});
  // Lower rank: an axis is inserted after the batch axis, as Keras does.
  run_layer_harness({.name = "Maximum ranks 2 and 3", .make = make_merge<layers::Maximum>, .weight_shapes = {},
                     .input_shapes = {{2, 3}, {2, 4, 3}}});
}

TEST(MergeHarness, Concatenate) {
  run_layer_harness({.name = "Concatenate last axis",
                     .make = [] { return LayerPtr(layers::Concatenate()); },
                     .weight_shapes = {},
                     .input_shapes = {{3, 2}, {3, 5}}});
  run_layer_harness({.name = "Concatenate axis 1 of 3 inputs",
                     .make = [] { return LayerPtr(layers::Concatenate({.axis = 1})); },
                     .weight_shapes = {},
                     .input_shapes = {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}}});
}

TEST(MergeHarness, Dot) {
  run_layer_harness({.name = "Dot axes 1",
                     .make = [] { return LayerPtr(layers::Dot({.axes = 1})); },
                     .weight_shapes = {},
                     .input_shapes = {{3, 4}, {3, 4}}});
  run_layer_harness({.name = "Dot normalize",
                     .make = [] { return LayerPtr(layers::Dot({.axes = -1, .normalize = true})); },
                     .weight_shapes = {},
                     .input_shapes = {{3, 4}, {3, 4}}});
  run_layer_harness({.name = "Dot axes (2, 1)",
                     .make = [] { return LayerPtr(layers::Dot({.axes = {2, 1}})); },
                     .weight_shapes = {},
                     .input_shapes = {{2, 3, 4}, {2, 4, 5}}});
  run_layer_harness({.name = "Dot axes (1, 1) rank 3",
                     .make = [] { return LayerPtr(layers::Dot({.axes = {1, 1}})); },
                     .weight_shapes = {},
                     .input_shapes = {{2, 3, 4}, {2, 3, 5}}});
}

// ---------------- values against hand computation ----------------

TEST(MergeValues, Elementwise) {
  Tensor a = mat({1, -2, 3, 4}, {2, 2}), b = mat({5, 6, -7, 8}, {2, 2}), c = mat({0, 1, 2, -3}, {2, 2});
  expect_values(layers::Add()(TensorList{a, b, c})[0], {6, 5, -2, 9}, {2, 2});
  expect_values(layers::Subtract()(TensorList{a, b})[0], {-4, -8, 10, -4}, {2, 2});
  expect_values(layers::Subtract()({a, b}), {-4, -8, 10, -4}, {2, 2});  // the braced-list form
  expect_values(layers::Multiply()(TensorList{a, b, c})[0], {0, -12, -42, -96}, {2, 2});
  expect_values(layers::Average()(TensorList{a, b, c})[0], {2, 5.0f / 3, -2.0f / 3, 3}, {2, 2});
  expect_values(layers::Maximum()(TensorList{a, b, c})[0], {5, 6, 3, 8}, {2, 2});
  expect_values(layers::Minimum()(TensorList{a, b, c})[0], {0, -2, -7, -3}, {2, 2});
  // (2, 2) with (2, 3, 2): a becomes (2, 1, 2) and broadcasts over the middle axis.
  Tensor d = Tensor::ones({2, 3, 2});
  expect_values(layers::Add()(TensorList{a, d})[0], {2, -1, 2, -1, 2, -1, 4, 5, 4, 5, 4, 5}, {2, 3, 2});
}

TEST(MergeValues, Concatenate) {
  Tensor a = mat({1, 2, 3, 4}, {2, 2}), b = mat({5, 6}, {2, 1});
  expect_values(layers::Concatenate()(TensorList{a, b})[0], {1, 2, 5, 3, 4, 6}, {2, 3});
  Tensor c = mat({7, 8}, {1, 2});
  expect_values(layers::Concatenate({.axis = 0})(TensorList{a, c})[0], {1, 2, 3, 4, 7, 8}, {3, 2});
}

TEST(MergeValues, Dot) {
  Tensor a = mat({1, 2, 3, 4, 5, 6}, {2, 3}), b = mat({1, 0, 1, 2, 1, 0}, {2, 3});
  expect_values(layers::Dot({.axes = 1})(TensorList{a, b})[0], {4, 13}, {2, 1});
  double n1 = std::sqrt(14.0) * std::sqrt(2.0), n2 = std::sqrt(77.0) * std::sqrt(5.0);
  expect_values(layers::Dot({.axes = 1, .normalize = true})(TensorList{a, b})[0],
                {static_cast<float>(4 / n1), static_cast<float>(13 / n2)}, {2, 1});
  // Per sample, x1 (2, 3) . x2 (3, 1) as a matrix product, and axes (1, 1): x1^T . x2.
  Tensor x1 = mat({1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}, {2, 2, 3});
  Tensor x2 = mat({1, 1, 1, 2, 0, 1}, {2, 3, 1});
  expect_values(layers::Dot({.axes = {2, 1}})(TensorList{x1, x2})[0], {6, 15, 2, 0}, {2, 2, 1});
  Tensor y2 = mat({1, 1, 0, 2}, {2, 2, 1});
  // Sample 0: x1^T (3, 2) . (2, 1) = [1+4, 2+5, 3+6]; sample 1: [0, 2, 0].
  expect_values(layers::Dot({.axes = {1, 1}})(TensorList{x1, y2})[0], {5, 7, 9, 0, 2, 0}, {2, 3, 1});
}

TEST(MergeValues, ConfigsAreKeras) {
  auto cfg = layers::Dot({.axes = {1, 2}, .normalize = true, .name = "sim"})->get_config();
  EXPECT_EQ(cfg["axes"], json::array({1, 2}));
  EXPECT_EQ(cfg["normalize"], true);
  EXPECT_EQ(layers::Dot({.axes = 1})->get_config()["axes"], 1);
  EXPECT_EQ(layers::Concatenate({.axis = 2})->get_config()["axis"], 2);
  json add = layers::Add()->get_config();
  EXPECT_EQ(add.size(), 3u) << add.dump();  // name, trainable, dtype only
  // Keras 3 files write dtype as a DTypePolicy object.
  json k3 = {{"name", "dot_1"}, {"trainable", true}, {"axes", {-1, -1}}, {"normalize", false},
             {"dtype", {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", "float32"}}}}}};
  LayerPtr dot = layer_from_config("Dot", k3);
  EXPECT_EQ(dot->name(), "dot_1");
  EXPECT_EQ(dot->get_config()["axes"], json::array({-1, -1}));
  EXPECT_THROW(layers::Dot(), ValueError);  // axes is required, as in Keras
}

// ---------------- errors name the layer and every shape ----------------

TEST(MergeErrors, NameLayerAndShapes) {
  auto a = layers::Input({3}), b = layers::Input({4}), c = layers::Input({2, 3});
  std::string m = message_of([&] { layers::Add()(std::vector<KerasTensor>{a, b}); });
  EXPECT_TRUE(contains(m, "Layer 'add' (Add)")) << m;
  EXPECT_TRUE(contains(m, "(None, 3), (None, 4)")) << m;
  EXPECT_THROW(layers::Add()(std::vector<KerasTensor>{a, b}), ShapeError);

  m = message_of([&] { layers::Add()(std::vector<KerasTensor>{a}); });
  EXPECT_TRUE(contains(m, "at least 2 inputs")) << m;
  m = message_of([&] { layers::Subtract()(std::vector<KerasTensor>{a, a, a}); });
  EXPECT_TRUE(contains(m, "exactly 2 inputs")) << m;
  EXPECT_TRUE(contains(m, "(Subtract)")) << m;

  m = message_of([&] { layers::Concatenate()(std::vector<KerasTensor>{a, c}); });
  EXPECT_TRUE(contains(m, "(Concatenate)") && contains(m, "axis -1") && contains(m, "(None, 3), (None, 2, 3)")) << m;
  auto d = layers::Input({5, 3});
  m = message_of([&] { layers::Concatenate({.axis = 2})(std::vector<KerasTensor>{c, d}); });
  EXPECT_TRUE(contains(m, "axis 2") && contains(m, "(None, 2, 3), (None, 5, 3)")) << m;
  EXPECT_NO_THROW(layers::Concatenate({.axis = 1})(std::vector<KerasTensor>{c, d}));

  m = message_of([&] { layers::Dot({.axes = 1})(std::vector<KerasTensor>{a, b}); });
  EXPECT_TRUE(contains(m, "(Dot)") && contains(m, "3 (axis 1) and 4 (axis 1)") && contains(m, "(None, 3), (None, 4)"))
      << m;
  m = message_of([&] { layers::Dot({.axes = 0})(std::vector<KerasTensor>{a, a}); });
  EXPECT_TRUE(contains(m, "batch axis")) << m;

  // Eager: a batch mismatch and a dtype mismatch.
  m = message_of([&] { layers::Add()(TensorList{Tensor::zeros({2, 3}), Tensor::zeros({4, 3})}); });
  EXPECT_TRUE(contains(m, "batch size") && contains(m, "(2, 3), (4, 3)")) << m;
  EXPECT_THROW(layers::Multiply()(TensorList{Tensor::zeros({2, 3}), Tensor::zeros({2, 3}, DType::float64)}), TypeError);
}

// ---------------- a functional model with two inputs and a shared Dense ----------------

TEST(MergeModel, SharedDenseGetsTheSumOfBothGradients) {
  auto a = layers::Input({3}), b = layers::Input({3});
  layers::Dense shared({.units = 2, .bias_initializer = "ones"});
  auto ya = shared(a), yb = shared(b);
  auto sum = layers::add({ya, yb});
  auto cat = layers::Concatenate()({ya, yb});
  EXPECT_EQ(shape_str(sum.shape), "(None, 2)");
  EXPECT_EQ(shape_str(cat.shape), "(None, 4)");
  Model model({a, b}, {sum, cat});
  EXPECT_EQ(shared->inbound_nodes().size(), 2u);
  EXPECT_EQ(model.count_params(), 3 * 2 + 2);  // the shared layer counts once
  EXPECT_EQ(model.trainable_weights().size(), 2u);

  Tensor xa = mat({1, 2, 3, -1, 0, 2}, {2, 3}), xb = mat({0, 1, -2, 4, 1, 1}, {2, 3});
  TensorList out = model(TensorList{xa, xb});
  ASSERT_EQ(out.size(), 2u);
  // Values: both branches against eager calls of the same layer.
  Tensor ea = shared(xa), eb = shared(xb);
  auto va = ea.to_vector<float>(), vb = eb.to_vector<float>();
  expect_values(out[0], {va[0] + vb[0], va[1] + vb[1], va[2] + vb[2], va[3] + vb[3]}, {2, 2});
  expect_values(out[1], {va[0], va[1], vb[0], vb[1], va[2], va[3], vb[2], vb[3]}, {2, 4});

  // loss = sum(out0) + sum(out1) = 2 (sum(a K) + sum(b K)) + 4 N sum(bias):
  // dK[i][j] = 2 sum_n (a[n][i] + b[n][i]), dbias[j] = 4 N.
  const Tensor& kernel = shared->kernel().value();
  const Tensor& bias = shared->bias().value();
  TensorList grads;
  {
    GradientTape tape;
    TensorList o = model(TensorList{xa, xb}, {.training = true});
    Tensor loss = ops::add(ops::sum(o[0]), ops::sum(o[1]));
    grads = tape.gradient(loss, {kernel, bias});
  }
  auto pa = xa.to_vector<float>(), pb = xb.to_vector<float>();
  std::vector<float> dk;
  for (int i = 0; i < 3; ++i) {
    float col = 2 * (pa[i] + pa[3 + i] + pb[i] + pb[3 + i]);
    dk.push_back(col);
    dk.push_back(col);
  }
  expect_values(grads[0], dk, {3, 2});
  expect_values(grads[1], {8, 8}, {2});

  // The same as the gradients of the two calls taken one at a time, summed.
  TensorList ga, gb;
  {
    GradientTape tape;
    Tensor y = shared(xa);
    ga = tape.gradient(ops::multiply(ops::sum(y), 2.0), {kernel, bias});
  }
  {
    GradientTape tape;
    Tensor y = shared(xb);
    gb = tape.gradient(ops::multiply(ops::sum(y), 2.0), {kernel, bias});
  }
  for (size_t i = 0; i < 2; ++i) {
    auto sum_of_calls = ops::add(ga[i], gb[i]).to_vector<float>();
    expect_values(grads[i], sum_of_calls, grads[i].shape());
  }
}

TEST(MergeModel, CosineSimilarityModelPredicts) {
  auto a = layers::Input({3}), b = layers::Input({3});
  auto sim = layers::dot({a, b}, {.axes = 1, .normalize = true});
  Model model({a, b}, {sim});
  Tensor xa = mat({1, 0, 0, 1, 1, 0}, {2, 3}), xb = mat({2, 0, 0, 0, 1, 1}, {2, 3});
  TensorList out = model.predict(TensorList{xa, xb});
  expect_values(out[0], {1.0f, 0.5f}, {2, 1});
}

// ---------------- operators on KerasTensors ----------------

TEST(KerasTensorOps, ArithmeticModelPredicts) {
  auto a = layers::Input({3}), b = layers::Input({3});
  auto y = a + b * 2.0;
  EXPECT_EQ(shape_str(y.shape), "(None, 3)");
  EXPECT_EQ(y.layer->class_name(), "OpLayer");
  Model model({a, b}, {y});
  EXPECT_EQ(model.get_layer("op_layer")->class_name(), "OpLayer");  // deterministic names
  EXPECT_NO_THROW(model.get_layer("op_layer_1"));
  Tensor xa = mat({1, 2, 3, 4, 5, 6}, {2, 3}), xb = mat({0.5f, -1, 2, 0, 1, -3}, {2, 3});
  expect_values(model.predict(TensorList{xa, xb})[0], {2, 0, 7, 4, 7, 0}, {2, 3});
}

TEST(KerasTensorOps, EveryOperatorAndSomeOps) {
  auto a = layers::Input({2}), b = layers::Input({2});
  std::vector<KerasTensor> outs = {a - b, a / b, -a, a + 1.0, a - 1.0, 2.0 * a, a / 2.0,
                                   1.0 + a, 1.0 - a, 4.0 / b, ops::relu(a - b), ops::maximum(a, b),
                                   ops::sum(a * b, {1}, true), ops::softmax(a), ops::square(a), ops::pow(b, 2.0)};
  Model model({a, b}, outs);
  Tensor xa = mat({1, -2, 3, 4}, {2, 2}), xb = mat({2, 4, -1, 0.5f}, {2, 2});
  TensorList r = model.predict(TensorList{xa, xb});
  auto pa = xa.to_vector<float>(), pb = xb.to_vector<float>();
  std::vector<std::function<float(float, float)>> want = {
      [](float x, float y) { return x - y; },       [](float x, float y) { return x / y; },
      [](float x, float) { return -x; },            [](float x, float) { return x + 1; },
      [](float x, float) { return x - 1; },         [](float x, float) { return 2 * x; },
      [](float x, float) { return x / 2; },         [](float x, float) { return 1 + x; },
      [](float x, float) { return 1 - x; },         [](float, float y) { return 4 / y; },
      [](float x, float y) { return std::max(x - y, 0.0f); }, [](float x, float y) { return std::max(x, y); }};
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<float> w;
    for (size_t i = 0; i < 4; ++i) w.push_back(want[k](pa[i], pb[i]));
    SCOPED_TRACE("output " + std::to_string(k));
    expect_values(r[k], w, {2, 2});
  }
  expect_values(r[12], {1 * 2 - 2 * 4, 3 * -1 + 4 * 0.5f}, {2, 1});
  float e0 = 1 / (1 + std::exp(-3.0f)), e1 = 1 / (1 + std::exp(1.0f));
  expect_values(r[13], {e0, 1 - e0, e1, 1 - e1}, {2, 2});
  expect_values(r[14], {1, 4, 9, 16}, {2, 2});
  expect_values(r[15], {4, 16, 1, 0.25f}, {2, 2});
}

TEST(KerasTensorOps, GradientsAndShapeErrors) {
  // d/da sum(a * b + a) = b + 1 through OpLayer nodes (gradients from the ops' GradFns).
  auto a = layers::Input({2}), b = layers::Input({2});
  Model model({a, b}, {a * b + a});
  Tensor xa = mat({1, 2, 3, 4}, {2, 2}), xb = mat({5, 6, 7, 8}, {2, 2});
  xa.set_requires_grad(true);
  TensorList g;
  {
    GradientTape tape;
    g = tape.gradient(ops::sum(model(TensorList{xa, xb})[0]), {xa});
  }
  expect_values(g[0], {6, 7, 8, 9}, {2, 2});

  auto c = layers::Input({3});
  layers::Dense dense({.units = 4, .name = "proj"});
  auto d = dense(c);
  std::string m = message_of([&] { (void)(a + d); });
  EXPECT_TRUE(contains(m, "(OpLayer)") && contains(m, "'add'") && contains(m, "(None, 2)") &&
              contains(m, "(None, 4)") && contains(m, "'proj' (Dense)"))
      << m;
  EXPECT_THROW((void)(a + d), ShapeError);
  // Symbolic matmul infers shapes from the op's shape function.
  auto w = layers::Input({2, 5});
  EXPECT_EQ(shape_str(ops::matmul(layers::Input({3, 2}), w).shape), "(None, 3, 5)");
  // Not serialisable yet, and says so.
  m = message_of([&] { (a + b).layer->get_config(); });
  EXPECT_TRUE(contains(m, "not serialisable")) << m;
  // The generic door: any registered op, and a clear error for a wrong input count.
  EXPECT_EQ(shape_str(layers::apply_op1("concatenate", {a, b}, Attrs{{"axis", int64_t{1}}}).shape), "(None, 4)");
  EXPECT_THROW(layers::apply_op1("add", {a}), ValueError);
  EXPECT_THROW(layers::apply_op1("no_such_op", {a}), NotImplementedError);
}
