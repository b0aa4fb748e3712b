// RandomRotation, RandomZoom and RandomTranslation: the harness (inference), values against real
// Keras with the randomness pinned by a factor pair (a, a) (tests/support/augment_reference.h),
// seeded determinism, the per-image draws, and errors.
#include <gtest/gtest.h>

#include "layers/random_rotation.h"
#include "layers/random_translation.h"
#include "layers/random_zoom.h"
#include "support/augment_checks.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
namespace ref = augment_reference;
using keras::testing::expect_close_to;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;

namespace {

std::vector<std::pair<std::string, std::function<LayerPtr(std::optional<int64_t>)>>> random_layers() {
  return {
      {"RandomRotation", [](std::optional<int64_t> s) { return LayerPtr(layers::RandomRotation({.factor = 0.2, .seed = s})); }},
      {"RandomZoom", [](std::optional<int64_t> s) { return LayerPtr(layers::RandomZoom({.height_factor = 0.3, .seed = s})); }},
      {"RandomTranslation", [](std::optional<int64_t> s) {
         return LayerPtr(layers::RandomTranslation({.height_factor = 0.2, .width_factor = 0.3, .seed = s}));
       }},
  };
}

}  // namespace

TEST(RandomAffineHarness, Inference) {
  // Training draws a new transform on every call, which the harness's repeated calls (config
  // round trip, gradient check) cannot follow, and no gradient flows through the transform
  // (Keras has none through random augmentation either); in inference mode the layers are the
  // identity and every check applies.
  for (const auto& [name, make] : random_layers())
    run_layer_harness({.name = name + " (inference)", .make = [make = make] { return make(3); }, .input_shape = {2, 5, 6, 3},
                       .weight_shapes = {}});
}

TEST(RandomRotation, PinnedAnglesMatchKeras) {
  Tensor x = keras::testing::augment_input();
  expect_close_to(layers::RandomRotation({.factor = {0.1, 0.1}, .fill_mode = "constant", .fill_value = -1.0})(x, {.training = true}),
               ref::kRotation36Constant, "36 degrees, constant", 2e-5f);
  expect_close_to(layers::RandomRotation({.factor = {-0.2, -0.2}, .interpolation = "nearest"})(x, {.training = true}),
               ref::kRotationMinus72Nearest, "-72 degrees, reflect, nearest", 2e-5f);
}

TEST(RandomZoomTranslation, PinnedFactorsMatchKeras) {
  Tensor x = keras::testing::augment_input();
  expect_close_to(layers::RandomZoom({.height_factor = {0.5, 0.5}, .width_factor = layers::FactorArg(-0.25, -0.25), .fill_mode = "nearest"})(
                   x, {.training = true}),
               ref::kZoom, "zoom out 1.5 x in 0.75", 2e-5f);
  expect_close_to(layers::RandomZoom({.height_factor = {-0.3, -0.3}})(x, {.training = true}), ref::kZoomHeightOnly,
               "zoom in 0.7 both axes (width follows height)", 2e-5f);
  expect_close_to(layers::RandomTranslation({.height_factor = {0.2, 0.2}, .width_factor = {-0.4, -0.4}, .fill_mode = "wrap"})(
                   x, {.training = true}),
               ref::kTranslation, "down 1, left 2.4, wrap", 2e-5f);
}

TEST(RandomAffine, InferenceIdentityTrainingSeededPerImage) {
  Tensor x = random::normal({4, 6, 7, 2}, 0, 1, uint64_t{9});
  for (const auto& [name, make] : random_layers()) {
    LayerPtr a = make(21), b = make(21), c = make(22);
    EXPECT_EQ((*a)(x).to_vector<float>(), x.to_vector<float>()) << name << ": inference is the identity";
    Tensor ya = (*a)(x, {.training = true});
    EXPECT_NE(ya.to_vector<float>(), x.to_vector<float>()) << name;
    EXPECT_EQ((*b)(x, {.training = true}).to_vector<float>(), ya.to_vector<float>()) << name << ": same seed, same draws";
    EXPECT_NE((*c)(x, {.training = true}).to_vector<float>(), ya.to_vector<float>()) << name << ": another seed";
    EXPECT_NE((*a)(x, {.training = true}).to_vector<float>(), ya.to_vector<float>()) << name << ": new draws each call";
    // One transform per image: two equal images come out different.
    Tensor same = ops::concatenate({ops::slice(x, {0, 0, 0, 0}, {1, 6, 7, 2}), ops::slice(x, {0, 0, 0, 0}, {1, 6, 7, 2})}, 0);
    Tensor y = (*make(5))(same, {.training = true});
    EXPECT_NE(ops::slice(y, {0, 0, 0, 0}, {1, 6, 7, 2}).to_vector<float>(), ops::slice(y, {1, 0, 0, 0}, {1, 6, 7, 2}).to_vector<float>())
        << name;
    // A rank-3 image is transformed as a batch of one.
    EXPECT_EQ((*make(5))(ops::squeeze(ops::slice(x, {0, 0, 0, 0}, {1, 6, 7, 2}), 0), {.training = true}).shape(), (Shape{6, 7, 2}));
  }
}

TEST(RandomAffine, Errors) {
  expect_error<ValueError>([] { layers::RandomRotation({.factor = 1.5}); }, {"RandomRotation", "[-1, 1]", "1.5"});
  expect_error<ValueError>([] { layers::RandomRotation({.factor = {2.0, 3.0}}); }, {"(2, 3)"});
  expect_error<ValueError>([] { layers::RandomRotation({.factor = 0.1, .fill_mode = "mirror"}); }, {"fill_mode", "'mirror'"});
  expect_error<ValueError>([] { layers::RandomRotation({.factor = 0.1, .interpolation = "bicubic"}); }, {"interpolation", "'bicubic'"});
  expect_error<ValueError>([] { layers::RandomZoom({.height_factor = -1.0}); }, {"RandomZoom", "height_factor", "(-1, 1]"});
  expect_error<ValueError>([] { layers::RandomZoom({.height_factor = 0.2, .width_factor = layers::FactorArg(0.2, 1.5)}); },
                           {"width_factor", "(0.2, 1.5)"});
  expect_error<ValueError>([] { layers::RandomTranslation({.height_factor = 0.1, .width_factor = -1.2}); },
                           {"RandomTranslation", "width_factor", "[-1, 1]"});
  expect_error<ValueError>([] { layers::RandomTranslation({.height_factor = 0.1, .width_factor = 0.1, .fill_mode = "zeros"}); },
                           {"fill_mode"});
  expect_error<ShapeError>([] { layers::RandomZoom({.height_factor = 0.1})(Tensor::zeros({2, 3}), {.training = true}); }, {"rank 3"});
}
