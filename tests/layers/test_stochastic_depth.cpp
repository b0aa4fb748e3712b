// StochasticDepth (ConvNeXt's DropPath): identity at inference, whole samples dropped and the kept
// ones scaled by 1 / keep_prob in training, reproducible from the global seed, gradients through
// the mask, the config both Keras generations write, and its errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "keras/keras.h"
#include "layers/stochastic_depth.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

namespace {

// What Keras 3.15.1 writes for keras.src.applications.convnext.StochasticDepth(0.25, name="sd")
// called on Input((4, 4, 3)) (Model.to_json()); tf_keras 2.21 writes module
// "tf_keras.src.applications.convnext" and dtype "float32" (both printed by the real Keras).
const char* kKeras3Entry = R"({"module": "keras.src.applications.convnext", "class_name": "StochasticDepth",
  "config": {"name": "sd", "trainable": true,
             "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
             "drop_path_rate": 0.25},
  "registered_name": "StochasticDepth", "build_config": {"input_shape": [null, 4, 4, 3]}})";
const char* kKeras2Config = R"({"name": "sd", "trainable": true, "dtype": "float32", "drop_path_rate": 0.25})";

// Per sample of y = layer(x) with x all ones: the single value every element of the sample holds.
std::vector<float> sample_values(const Tensor& y) {
  const int64_t n = y.shape()[0], per = y.numel() / n;
  auto v = y.to_vector<float>();
  std::vector<float> out;
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t i = 1; i < per; ++i) EXPECT_EQ(v[s * per + i], v[s * per]) << "sample " << s << " is not dropped whole";
    out.push_back(v[s * per]);
  }
  return out;
}

}  // namespace

TEST(StochasticDepth, Harness) {
  run_layer_harness({.name = "StochasticDepth (inference)",
                     .make = [] { return LayerPtr(L::StochasticDepth({.drop_path_rate = 0.5})); },
                     .input_shape = {3, 4, 4, 2},
                     .weight_shapes = {}});
  run_layer_harness({.name = "StochasticDepth rate 0 (training)",
                     .make = [] { return LayerPtr(L::StochasticDepth({.drop_path_rate = 0.0})); },
                     .input_shape = {3, 5},
                     .weight_shapes = {},
                     .training = true});
}

TEST(StochasticDepth, IdentityAtInference) {
  Tensor x = random::normal({4, 3, 3, 2}, 0, 1, uint64_t{1});
  L::StochasticDepth layer({.drop_path_rate = 0.9});
  EXPECT_TRUE(layer(x).same(x));
  EXPECT_TRUE(layer(x, {.training = false}).same(x));
}

// Keras: (x / keep) * floor(keep + uniform(0, 1)) with one draw per sample.
TEST(StochasticDepth, TrainingDropsWholeSamplesAndScalesTheKeptOnes) {
  set_random_seed(3);
  const double rate = 0.3, keep = 1 - rate;
  L::StochasticDepth layer({.drop_path_rate = rate});
  Tensor x = Tensor::ones({2000, 2, 2, 3});
  auto values = sample_values(layer(x, {.training = true}));
  int kept = 0;
  for (float v : values) {
    if (v != 0) {
      ++kept;
      EXPECT_FLOAT_EQ(v, static_cast<float>(1 / keep));
    }
  }
  EXPECT_NEAR(kept / 2000.0, keep, 0.03);  // binomial sd ~0.01
  // float64 keeps its dtype; rate 1 drops everything (Keras divides by zero there).
  Tensor y64 = L::StochasticDepth({.drop_path_rate = 0.5})(Tensor::ones({8, 3}, DType::float64), {.training = true});
  EXPECT_EQ(y64.dtype(), DType::float64);
  for (double v : y64.to_vector<double>()) EXPECT_TRUE(v == 0 || v == 2) << v;
  for (float v : L::StochasticDepth({.drop_path_rate = 1.0})(x, {.training = true}).to_vector<float>()) ASSERT_EQ(v, 0);
}

TEST(StochasticDepth, SeededFromTheGlobalSeed) {
  auto run = [](uint64_t seed) {
    set_random_seed(seed);
    L::StochasticDepth layer({.drop_path_rate = 0.5});
    Tensor x = Tensor::ones({64, 3});
    auto first = sample_values(layer(x, {.training = true}));
    auto second = sample_values(layer(x, {.training = true}));
    EXPECT_NE(first, second);  // the layer's stream advances
    return first;
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

// The gradient is the per-sample scale: dL/dx = P * mask / keep.
TEST(StochasticDepth, GradientFollowsTheMask) {
  set_random_seed(5);
  L::StochasticDepth layer({.drop_path_rate = 0.5});
  Tensor x = random::normal({16, 3}, 0, 1, uint64_t{2}).set_requires_grad(true);
  Tensor p = random::normal({16, 3}, 0, 1, uint64_t{3});
  GradientTape tape;
  Tensor y = layer(x, {.training = true});
  Tensor g = tape.gradient(ops::sum(ops::multiply(y, p)), {x})[0];
  auto xv = x.to_vector<float>(), yv = y.to_vector<float>(), pv = p.to_vector<float>(), gv = g.to_vector<float>();
  int dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const float scale = yv[i] / xv[i];
    ASSERT_TRUE(std::abs(scale) < 1e-6 || std::abs(scale - 2) < 1e-5) << scale;
    EXPECT_NEAR(gv[i], pv[i] * scale, 1e-5);
    dropped += std::abs(scale) < 1e-6;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 48);
}

// Keras 3's entry reads and is written back as Keras 3 wrote it; tf_keras's config reads.
TEST(StochasticDepth, ConfigsAreKeras) {
  const json k3 = json::parse(kKeras3Entry);
  auto x = L::Input({4, 4, 3});
  auto layer = layer_from_config("StochasticDepth", k3["config"]);
  Model model(x, (*layer)(x));
  json entry = serialize_model(model)["config"]["layers"][1];
  entry.erase("name");
  entry.erase("inbound_nodes");
  EXPECT_EQ(entry, k3);
  auto from2 = layer_from_config("StochasticDepth", json::parse(kKeras2Config));
  EXPECT_EQ(std::dynamic_pointer_cast<L::StochasticDepthImpl>(from2)->options().drop_path_rate, 0.25);
  EXPECT_EQ(from2->name(), "sd");
}

TEST(StochasticDepth, Errors) {
  expect_error<ValueError>([] { L::StochasticDepth({.drop_path_rate = 1.5}); }, {"StochasticDepth", "[0, 1]", "1.5"});
  expect_error<ValueError>([] { L::StochasticDepth({.drop_path_rate = -0.1}); }, {"[0, 1]"});
  expect_error<ValueError>([] { layer_from_config("StochasticDepth", json{{"name", "sd"}}); },
                           {"'drop_path_rate'", "none"});
  expect_error<ShapeError>([] { L::StochasticDepth({.name = "sd"})(Tensor::scalar(1.0f)); }, {"'sd'", "rank >= 1"});
}
