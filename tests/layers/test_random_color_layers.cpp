// RandomContrast and RandomBrightness: the harness (inference), values against real Keras where
// the draw can be pinned (tests/support/augment_reference.h), the per-image formula, seeded
// determinism, gradients in training, and errors.
#include <gtest/gtest.h>

#include "layers/random_brightness.h"
#include "layers/random_contrast.h"
#include "support/augment_checks.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
namespace ref = augment_reference;
using keras::testing::expect_close_to;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;

TEST(RandomColorHarness, Inference) {
  // Training draws new factors on every call, which the harness's repeated calls cannot follow;
  // in inference mode both layers are the identity and every check applies.
  run_layer_harness({.name = "RandomContrast (inference)",
                     .make = [] { return LayerPtr(layers::RandomContrast({.factor = 0.5, .seed = 1})); },
                     .input_shape = {2, 4, 5, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "RandomBrightness (inference)",
                     .make = [] { return LayerPtr(layers::RandomBrightness({.factor = 0.5, .seed = 1})); },
                     .input_shape = {2, 4, 5, 3},
                     .weight_shapes = {}});
}

TEST(RandomColor, PinnedDrawsMatchKeras) {
  Tensor x = keras::testing::augment_input();
  expect_close_to(layers::RandomBrightness({.factor = {0.3, 0.3}, .value_range = {0, 4}})(x, {.training = true}), ref::kBrightness,
               "brightness +0.3 of the range, clipped");
  // RandomContrast's draw can only be pinned at factor 0 (f = 1): the clip into value_range remains.
  expect_close_to(layers::RandomContrast({.factor = 0.0, .value_range = {0, 3}})(x, {.training = true}), ref::kContrastZero,
               "contrast factor 0 clips");
}

TEST(RandomContrast, ScalesEachImageAboutItsChannelMeans) {
  Tensor x = random::uniform({3, 4, 5, 2}, 0.0, 1.0, uint64_t{6});
  layers::RandomContrast layer({.factor = {0.2, 0.6}, .value_range = {-100, 100}, .seed = 4});
  EXPECT_EQ(layer(x).to_vector<float>(), x.to_vector<float>()) << "inference is the identity";
  Tensor y = layer(x, {.training = true});
  Tensor mean = ops::mean(x, {1, 2}, true);
  Tensor dev = ops::subtract(x, mean), dev_y = ops::subtract(y, mean);
  std::vector<double> factors;
  for (int64_t i = 0; i < 3; ++i) {
    auto d = ops::slice(dev, {i, 0, 0, 0}, {1, 4, 5, 2}).to_vector<float>();
    auto dy = ops::slice(dev_y, {i, 0, 0, 0}, {1, 4, 5, 2}).to_vector<float>();
    double num = 0, den = 0;  // least-squares factor of this image
    for (size_t k = 0; k < d.size(); ++k) num += double(dy[k]) * d[k], den += double(d[k]) * d[k];
    const double f = num / den;
    for (size_t k = 0; k < d.size(); ++k) EXPECT_NEAR(dy[k], f * d[k], 1e-5) << "image " << i;
    EXPECT_GE(f, 1.0 - 0.2 - 1e-5);  // [1 - lower, 1 + upper)
    EXPECT_LE(f, 1.0 + 0.6 + 1e-5);
    factors.push_back(f);
  }
  EXPECT_NE(factors[0], factors[1]) << "one factor per image";
  layers::RandomContrast twin({.factor = {0.2, 0.6}, .value_range = {-100, 100}, .seed = 4});
  EXPECT_EQ(twin(x, {.training = true}).to_vector<float>(), y.to_vector<float>()) << "same seed, same factors";
  // Keras 3 clips a single factor's lower bound to 0: factor 0.3 only ever raises the contrast.
  EXPECT_EQ(layers::RandomContrast({.factor = 0.3})->get_config()["factor"], json::array({0.0, 0.3}));
}

TEST(RandomBrightness, AddsOneClippedOffsetPerImageAndPassesGradients) {
  Tensor x = random::uniform({4, 3, 3, 3}, 0.2, 0.8, uint64_t{2});
  layers::RandomBrightness layer({.factor = 0.1, .value_range = {1, 0}, .seed = 9});
  EXPECT_EQ(layer->options().value_range, (layers::ValueRange{0, 1})) << "value_range is sorted, as Keras";
  Tensor y = layer(x, {.training = true});
  auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (int64_t i = 0; i < 4; ++i) {
    const float d = yv[i * 27] - xv[i * 27];
    EXPECT_LE(std::abs(d), 0.1f + 1e-6f);
    for (int k = 0; k < 27; ++k) EXPECT_NEAR(yv[i * 27 + k] - xv[i * 27 + k], d, 1e-6) << "image " << i;
  }
  // The augmentation is a differentiable function of the image (the draws are constants).
  Tensor xg = x.clone();
  xg.set_requires_grad(true);
  TensorList grads;
  {
    GradientTape tape;
    grads = tape.gradient(ops::sum(layer(xg, {.training = true})), {xg});
  }
  ASSERT_TRUE(grads[0].defined());
  EXPECT_EQ(grads[0].to_vector<float>(), std::vector<float>(108, 1.0f));
}

TEST(RandomColor, Errors) {
  expect_error<ValueError>([] { layers::RandomContrast({.factor = 1.5}); }, {"RandomContrast", "[0, 1]", "1.5"});
  expect_error<ValueError>([] { layers::RandomContrast({.factor = -0.2}); }, {"[0, 1]", "-0.2"});
  expect_error<ValueError>([] { layers::RandomBrightness({.factor = {1.5, 2.0}}); }, {"RandomBrightness", "[-1, 1]", "(1.5, 2)"});
  expect_error<ValueError>([] { layer_from_config("RandomBrightness", {{"factor", 0.1}, {"value_range", {0, 1, 2}}}); },
                           {"value_range a list of 2 numbers"});
  expect_error<ValueError>([] { layer_from_config("RandomContrast", {{"factor", "big"}}); }, {"factor", "a number or a list of 2 numbers"});
  expect_error<ShapeError>([] { layers::RandomBrightness({.factor = 0.1})(Tensor::zeros({5}), {.training = true}); }, {"rank 3"});
}
