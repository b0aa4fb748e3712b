// keras::applications::MobileNet and MobileNetV2 against real Keras 3.15 (tests/support/
// application_checks.h): config, layers and weights as Keras builds them (alpha 1 and, from the
// weighted fixture, MobileNet alpha 0.1), pooling heads, the ImageNet argument checks, and a
// weights file Keras wrote for MobileNet(alpha=0.1) loaded by topology through `weights`
// (preprocess_input: test_imagenet_utils.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "keras/applications/mobilenet.h"
#include "keras/applications/mobilenet_v2.h"
#include "keras/data/readers.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;

TEST(MobileNet, IsKerasMobileNet) {
  expect_family_is_keras<MobileNetOptions>({{"MobileNet", MobileNet}}, {32, 32, 3});
  EXPECT_EQ(MobileNet({.input_shape = {32, 32, 3}, .classes = 10})->name(), "mobilenet_1.00_32");
  // tiny_mobilenet is Keras's MobileNet(alpha=0.1, input_shape=(32, 32, 3), classes=10).
  expect_config_matches_keras(*MobileNet({.input_shape = {32, 32, 3}, .alpha = 0.1, .classes = 10}), "tiny_mobilenet");
}

TEST(MobileNetV2, IsKerasMobileNetV2) {
  expect_family_is_keras<MobileNetV2Options>({{"MobileNetV2", MobileNetV2}}, {32, 32, 3});
  auto any = MobileNetV2({.alpha = 0.35, .include_top = false, .pooling = "max"});
  EXPECT_EQ(any->name(), "mobilenetv2_0.35_None");  // Keras's name for an unknown size
  EXPECT_EQ(any->outputs()[0].shape, (Shape{-1, 1280}));
  EXPECT_EQ(MobileNetV2({.alpha = 1.4, .include_top = false, .pooling = "avg"})->outputs()[0].shape, (Shape{-1, 1792}));
}

TEST(MobileNet, KerasImagenetChecks) {
  expect_error<ValueError>([] { MobileNet({.depth_multiplier = 2, .weights = "imagenet"}); },
                           {"MobileNet", "depth_multiplier 1", "got 2"});
  expect_error<ValueError>([] { MobileNet({.alpha = 0.3, .weights = "imagenet"}); }, {"MobileNet", "alpha 0.25"});
  expect_error<ValueError>([] { MobileNetV2({.alpha = 0.3, .weights = "imagenet"}); }, {"MobileNetV2", "alpha 0.35"});
  // With the top, the input must be a size Keras has a file for (the default follows the input).
  expect_error<ValueError>([] { MobileNetV2({.input_shape = {100, 100, 3}, .weights = "imagenet"}); },
                           {"MobileNetV2", "(224, 224, 3)", "(100, 100, 3)"});
  // Keras's own file is read from its download cache, never downloaded.
  const auto home = std::filesystem::temp_directory_path() / "keras_home_empty";
  ::setenv("KERAS_HOME", home.c_str(), 1);
  expect_error<IOError>([] { MobileNetV2({.input_shape = {96, 96, 3}, .include_top = false, .weights = "imagenet"}); },
                        {"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_96_no_top.h5",
                         "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"});
  expect_error<IOError>([&] { MobileNetV2({.input_shape = {96, 96, 3}, .weights = "imagenet"}); },
                        {(home / "models" / "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_96.h5").string()});
  expect_error<IOError>([] { MobileNet({.input_shape = {100, 100, 3}, .include_top = false, .weights = "imagenet"}); },
                        {"mobilenet_1_0_224_tf_no_top.h5"});  // Keras falls back to the 224 file
  ::unsetenv("KERAS_HOME");
}

// The weights files tf_keras and Keras 3 wrote for MobileNet(alpha=0.1, (32, 32, 3), classes=10)
// (seeded random weights, BN statistics included) loaded by topology through `weights`: the
// model predicts what Keras predicted (1e-5).
TEST(MobileNet, LoadsKerasWeightsFilesByTopology) {
  expect_loads_keras_weights("tiny_mobilenet", [](const std::string& file) {
    return MobileNet({.input_shape = {32, 32, 3}, .alpha = 0.1, .weights = file, .classes = 10});
  });
}
