// RandomCrop and RandomFlip: the harness, Keras 3's training/inference behaviour, seeded
// determinism, values against real Keras where Keras is deterministic
// (tests/support/augment_reference.h), and errors.
#include <gtest/gtest.h>

#include <set>

#include "layers/random_crop.h"
#include "layers/random_flip.h"
#include "support/augment_checks.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
namespace ref = augment_reference;
using keras::testing::expect_close_to;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;

namespace {

Tensor image(const Tensor& batch, int64_t i) {
  Shape s = batch.shape();
  return ops::slice(batch, {i, 0, 0, 0}, {1, s[1], s[2], s[3]});
}

}  // namespace

TEST(RandomCropHarness, TrainingWithAFullHeightWindow) {
  // In training a window as tall as the image is Keras's deterministic branch (the centred
  // window), so every check, the gradient check included, applies; at inference Keras 3 returns
  // the input uncropped, whose shape is not compute_output_shape's, so (a) cannot run there.
  run_layer_harness({.name = "RandomCrop (training, full height)",
                     .make = [] { return LayerPtr(layers::RandomCrop({.height = 5, .width = 3, .seed = 2})); },
                     .input_shape = {2, 5, 6, 3},
                     .weight_shapes = {},
                     .gradcheck_input_shape = {1, 5, 4, 2},
                     .training = true});
}

TEST(RandomFlipHarness, InferenceIsIdentity) {
  // Training draws new flips on every call, which the gradient check's repeated calls cannot
  // follow; in inference mode every check applies (the layer is the identity).
  for (const char* mode : {"horizontal", "vertical", "horizontal_and_vertical"})
    run_layer_harness({.name = std::string("RandomFlip ") + mode,
                       .make = [mode] { return LayerPtr(layers::RandomFlip({.mode = mode, .seed = 1})); },
                       .input_shape = {2, 4, 5, 3},
                       .weight_shapes = {}});
}

TEST(RandomCrop, MatchesKerasWhereKerasIsDeterministic) {
  Tensor x = keras::testing::augment_input();
  expect_close_to(layers::RandomCrop({.height = 5, .width = 3})(x, {.training = true}), ref::kRandomCropEqualHeight, "full height");
  expect_close_to(layers::RandomCrop({.height = 7, .width = 4})(x, {.training = true}), ref::kRandomCropSmall, "smaller image");
}

TEST(RandomCrop, InferenceReturnsTheInputAsKeras3Does) {
  Tensor x = keras::testing::augment_input();
  layers::RandomCrop crop({.height = 3, .width = 3, .seed = 1});
  Tensor y = crop(x, {.training = false});
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(crop->compute_output_shape({x.shape()})[0], (Shape{2, 3, 3, 2}));
}

TEST(RandomCrop, TrainingTakesOneSeededWindowPerBatch) {
  Tensor x = random::normal({3, 9, 8, 2}, 0, 1, uint64_t{4});
  auto windows_of = [&](const Tensor& y) {
    // Finds the (top, left) of the window y[0] in x[0] and checks every image used it.
    std::vector<std::pair<int64_t, int64_t>> found;
    for (int64_t t = 0; t + 4 <= 9; ++t)
      for (int64_t l = 0; l + 3 <= 8; ++l)
        if (ops::slice(x, {0, t, l, 0}, {3, 4, 3, 2}).to_vector<float>() == y.to_vector<float>()) found.push_back({t, l});
    return found;
  };
  layers::RandomCrop a({.height = 4, .width = 3, .seed = 11}), b({.height = 4, .width = 3, .seed = 11});
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int i = 0; i < 12; ++i) {
    Tensor ya = a(x, {.training = true});
    ASSERT_EQ(ya.shape(), (Shape{3, 4, 3, 2}));
    auto w = windows_of(ya);
    ASSERT_EQ(w.size(), 1u) << "call " << i << ": the output is one window of the whole batch";
    seen.insert(w[0]);
    EXPECT_EQ(b(x, {.training = true}).to_vector<float>(), ya.to_vector<float>()) << "same seed, same windows";
  }
  EXPECT_GT(seen.size(), 3u) << "windows vary from call to call";
  // An unseeded layer records the seed it drew, so its config reproduces it.
  layers::RandomCrop unseeded({.height = 4, .width = 3});
  ASSERT_TRUE(unseeded->options().seed.has_value());
  EXPECT_GE(*unseeded->options().seed, 1);
  EXPECT_LE(*unseeded->options().seed, 1000000000);
  EXPECT_TRUE(unseeded->get_config()["seed"].is_number_integer());
}

TEST(RandomFlip, InferenceIdentityTrainingFlipsWholeImages) {
  Tensor x = random::normal({16, 3, 4, 2}, 0, 1, uint64_t{8});
  for (const std::string mode : {"horizontal", "vertical", "horizontal_and_vertical"}) {
    layers::RandomFlip flip({.mode = mode, .seed = 5});
    EXPECT_EQ(flip(x).to_vector<float>(), x.to_vector<float>()) << "inference is the identity";
    Tensor y = flip(x, {.training = true});
    Tensor expected_flip = x;
    if (mode != "vertical") expected_flip = layers::flip_images(expected_flip, 2);
    if (mode != "horizontal") expected_flip = layers::flip_images(expected_flip, 1);
    int flipped = 0, kept = 0;
    for (int64_t i = 0; i < 16; ++i) {
      auto yi = image(y, i).to_vector<float>();
      bool same = yi == image(x, i).to_vector<float>();
      bool turned = yi == image(expected_flip, i).to_vector<float>();
      EXPECT_TRUE(same || turned) << mode << " image " << i;
      flipped += turned;
      kept += same;
    }
    EXPECT_GT(flipped, 2) << mode;
    EXPECT_GT(kept, 2) << mode;
    // Same seed: same flips, call after call; the inherited training mode applies.
    layers::RandomFlip twin({.mode = mode, .seed = 5});
    EXPECT_EQ(twin(x, {.training = true}).to_vector<float>(), y.to_vector<float>());
    TrainingScope scope(true);
    EXPECT_EQ(twin(x).to_vector<float>(), flip(x).to_vector<float>());
  }
  // Left-right flip of a known image.
  Tensor small = Tensor::arange(0, 6).view({1, 1, 3, 2});
  EXPECT_EQ(layers::flip_images(small, 2).to_vector<float>(), (std::vector<float>{4, 5, 2, 3, 0, 1}));
}

TEST(RandomCropFlip, Errors) {
  expect_error<ValueError>([] { layers::RandomCrop({.height = 0, .width = 2}); }, {"RandomCrop", "(0, 2)"});
  expect_error<ValueError>([] { layers::RandomFlip({.mode = "diagonal"}); },
                           {"RandomFlip", "'horizontal', 'vertical' or 'horizontal_and_vertical'", "'diagonal'"});
  expect_error<ShapeError>([] { layers::RandomFlip()(Tensor::zeros({3, 4}), {.training = true}); }, {"rank 3"});
  expect_error<NotImplementedError>([] { layers::RandomFlip({.data_format = "channels_first"}); }, {"channels_first"});
}
