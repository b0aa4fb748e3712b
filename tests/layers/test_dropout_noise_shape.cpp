// Dropout with a noise_shape (layers/dropout.h, ops::dropout_with_noise_shape): one keep decision
// per element of the noise shape, broadcast over the input, as EfficientNet's (None, 1, 1, 1)
// drops whole samples; None entries take the input's extent; seeded masks repeat; inference is
// the identity; configs read and write the JSON Keras writes.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/autodiff.h"
#include "backend/ops_nn.h"
#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

TEST(DropoutNoiseShapeHarness, Inference) {
  run_layer_harness({.name = "Dropout noise_shape (None, 1, 1, 1)",
                     .make = [] { return LayerPtr(L::Dropout({.rate = 0.3, .noise_shape = Shape{-1, 1, 1, 1}, .seed = 4})); },
                     .input_shape = {2, 3, 3, 2},
                     .weight_shapes = {}});
}

TEST(DropoutNoiseShape, WholeSamplesKeptOrDropped) {
  // (None, 1, 1, 1): every sample is all zeros or all 1/(1-rate).
  L::Dropout drop({.rate = 0.25, .noise_shape = Shape{-1, 1, 1, 1}, .seed = 7});
  Tensor x = Tensor::ones({2000, 2, 3, 2});
  std::vector<float> y = drop(x, {.training = true}).to_vector<float>();
  int dropped = 0;
  for (int n = 0; n < 2000; ++n) {
    float first = y[n * 12];
    EXPECT_TRUE(first == 0.0f || std::abs(first - 1.0f / 0.75f) < 1e-6f) << first;
    for (int i = 1; i < 12; ++i) ASSERT_EQ(y[n * 12 + i], first) << "sample " << n << " is not one decision";
    dropped += first == 0.0f;
  }
  EXPECT_NEAR(dropped / 2000.0, 0.25, 0.03);
  // Same seed, same masks; successive calls draw new ones; inference is the identity.
  L::Dropout twin({.rate = 0.25, .noise_shape = Shape{-1, 1, 1, 1}, .seed = 7});
  EXPECT_EQ(twin(x, {.training = true}).to_vector<float>(), y);
  EXPECT_NE(drop(x, {.training = true}).to_vector<float>(), y);
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(drop(x, {.training = false}).to_vector<float>(), x.to_vector<float>());
}

TEST(DropoutNoiseShape, BroadcastAlongTheUnitAxes) {
  // (1, None): one mask row shared by every sample; (None, 1, None): shared along axis 1.
  Tensor x = Tensor::ones({6, 50});
  std::vector<float> y = L::Dropout({.rate = 0.5, .noise_shape = Shape{1, -1}, .seed = 3})(x, {.training = true}).to_vector<float>();
  for (int n = 1; n < 6; ++n)
    for (int j = 0; j < 50; ++j) ASSERT_EQ(y[n * 50 + j], y[j]);
  EXPECT_NE(std::count(y.begin(), y.begin() + 50, 0.0f), 0);
  EXPECT_NE(std::count(y.begin(), y.begin() + 50, 2.0f), 0);
  Tensor x3 = Tensor::ones({4, 3, 40});
  std::vector<float> y3 = L::Dropout({.rate = 0.5, .noise_shape = Shape{-1, 1, 40}, .seed = 3})(x3, {.training = true}).to_vector<float>();
  for (int n = 0; n < 4; ++n)
    for (int r = 1; r < 3; ++r)
      for (int c = 0; c < 40; ++c) ASSERT_EQ(y3[(n * 3 + r) * 40 + c], y3[n * 3 * 40 + c]);
  // A noise shape equal to the input's draws one decision per element, as plain dropout does.
  std::vector<float> full = L::Dropout({.rate = 0.5, .noise_shape = Shape{6, 50}, .seed = 3})(x, {.training = true}).to_vector<float>();
  EXPECT_NE(std::vector<float>(full.begin(), full.begin() + 50), std::vector<float>(full.begin() + 50, full.begin() + 100));
}

TEST(DropoutNoiseShape, GradientIsTheMask) {
  L::Dropout drop({.rate = 0.5, .noise_shape = Shape{-1, 1, 1, 1}, .seed = 11});
  Tensor x = random::normal({8, 2, 2, 3}, 0, 1, uint64_t{2});
  x.set_requires_grad(true);
  Tensor y, g;
  {
    GradientTape tape;
    y = drop(x, {.training = true});
    g = tape.gradient(ops::sum(y), {x})[0];
  }
  std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>(), gv = g.to_vector<float>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_FLOAT_EQ(gv[i] * xv[i], yv[i]) << i;  // y = x * mask / (1 - rate)
}

TEST(DropoutNoiseShape, ConfigsAsKerasWritesThem) {
  // EfficientNetB0.k3.json (block2b_drop) and EfficientNetB0.k2.json (tf_keras).
  json k3 = json::parse(R"({"name": "block2b_drop", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "rate": 0.025, "seed": null, "noise_shape": [null, 1, 1, 1]})");
  json k2 = json::parse(R"({"name": "block2b_drop", "trainable": true, "dtype": "float32", "rate": 0.025,
      "noise_shape": [null, 1, 1, 1], "seed": null})");
  for (const json& c : {k3, k2}) {
    LayerPtr layer = layer_from_config("Dropout", c);
    EXPECT_EQ(layer->get_config(), k2);
    auto in = L::Input({8, 8, 24});
    Model model(in, (*layer)(in));
    EXPECT_EQ(serialize_model(model)["config"]["layers"][1]["config"], k3);
  }
}

TEST(DropoutNoiseShape, Errors) {
  expect_error<ValueError>([] { L::Dropout({.rate = 0.5, .noise_shape = Shape{-1, 0}}); }, {"noise_shape", "(None, 0)"});
  expect_error<ValueError>([] { L::Dropout({.rate = 0.5, .noise_shape = Shape{-2, 1}}); }, {"noise_shape"});
  // Another rank, or an extent that is neither 1 nor the input's, is refused before any call.
  expect_error<ShapeError>([] { L::Dropout({.rate = 0.5, .noise_shape = Shape{-1, 1, 1}})(L::Input({4})); },
                           {"noise_shape (None, 1, 1)", "(None, 4)"});
  expect_error<ShapeError>([] { L::Dropout({.rate = 0.5, .noise_shape = Shape{-1, 3}})(Tensor::ones({2, 5})); },
                           {"noise_shape (None, 3)", "(2, 5)"});
  Generator gen(1);
  expect_error<ShapeError>([&] { ops::dropout_with_noise_shape(Tensor::ones({2, 5}), 0.5, {2, 3}, gen); }, {"(2, 3)", "(2, 5)"});
  expect_error<TypeError>([&] { ops::dropout_with_noise_shape(Tensor::ones({2}, DType::int64), 0.5, {2}, gen); }, {"int64"});
  expect_error<ValueError>([&] { ops::dropout_with_noise_shape(Tensor::ones({2}), 1.0, {2}, gen); }, {"rate"});
}
