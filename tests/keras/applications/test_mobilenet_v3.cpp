// keras::applications::MobileNetV3Small and MobileNetV3Large against real Keras 3.15 (tests/
// support/application_checks.h): config, layers and weights as Keras builds them (alpha 1 at
// 32x32, classes 10; and Keras's weighted tiny fixture, MobileNetV3Small(alpha=0.1) with conv_2
// narrowed 1024 -> 32, built through Keras's module-level builder detail::MobileNetV3), pooling
// heads, Keras's argument checks and ImageNet file names, the weights files Keras wrote for the
// tiny fixture loaded by topology, and preprocess_input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "keras/applications/mobilenet_v3.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;

TEST(MobileNetV3, IsKerasMobileNetV3) {
  expect_family_is_keras<MobileNetV3Options>(
      {{"MobileNetV3Small", MobileNetV3Small}, {"MobileNetV3Large", MobileNetV3Large}}, {32, 32, 3});
  // tiny_mobilenet_v3_small is Keras's MobileNetV3Small(alpha=0.1, input_shape=(32, 32, 3),
  // classes=10) with last_point_ch 32: not a public model, Keras's builder with those arguments.
  expect_config_matches_keras(
      *applications::detail::MobileNetV3("small", 32, {.input_shape = {32, 32, 3}, .alpha = 0.1, .classes = 10}),
      "tiny_mobilenet_v3_small");
}

// Keras's own options, against what Keras built for the same calls (tests/data/keras/
// applications/make_variants.py): minimalistic (3x3 kernels, ReLU, no squeeze-and-excite) with
// alpha 0.75, no Dropout and no Rescaling; alpha > 1 (conv_2 widened), a non-square one-channel
// input, logits and a name; the features of the default call, whose input is (None, None, 3).
TEST(MobileNetV3, OptionsAreKeras) {
  expect_is_keras(*MobileNetV3Large({.input_shape = {32, 32, 3}, .alpha = 0.75, .minimalistic = true, .classes = 10,
                                     .dropout_rate = 0, .include_preprocessing = false}),
                  "variants/MobileNetV3Large_minimalistic");
  expect_is_keras(*MobileNetV3Small({.input_shape = {48, 40, 1}, .alpha = 1.25, .classes = 7,
                                     .classifier_activation = "", .name = "wide"}),
                  "variants/MobileNetV3Small_wide");
  expect_is_keras(*MobileNetV3Small({.include_top = false, .pooling = "max"}), "variants/MobileNetV3Small_features");
}

// Keras's defaults: no input size is imposed, with the top too (its head pools globally first).
TEST(MobileNetV3, KerasDefaults) {
  auto m = MobileNetV3Large();
  EXPECT_EQ(m->name(), "MobileNetV3Large");
  EXPECT_EQ(m->inputs()[0].shape, (Shape{-1, -1, -1, 3}));
  EXPECT_EQ(m->outputs()[0].shape, (Shape{-1, 1000}));
  EXPECT_EQ(m->get_layer("conv_2")->weights()[0].value().shape(), (Shape{1, 1, 960, 1280}));
}

TEST(MobileNetV3, KerasArgumentChecks) {
  expect_error<ValueError>([] { MobileNetV3Small({.input_shape = {31, 64, 3}}); }, {"MobileNetV3Small", "32"});
  expect_error<ValueError>([] { MobileNetV3Small({.weights = "imagenet", .classes = 10}); },
                           {"MobileNetV3Small", "classes 1000", "10"});
  expect_error<ValueError>([] { MobileNetV3Small({.alpha = 0.5, .weights = "imagenet"}); },
                           {"MobileNetV3Small", "alpha 0.75 or 1.0"});
  expect_error<ValueError>([] { MobileNetV3Large({.alpha = 0.75, .minimalistic = true, .weights = "imagenet"}); },
                           {"MobileNetV3Large", "minimalistic: 1.0"});
  expect_error<ValueError>([] { MobileNetV3Large({.weights = "imagenet", .classifier_activation = "relu"}); },
                           {"MobileNetV3Large", "relu"});
  expect_error<ValueError>([] { MobileNetV3Large({.weights = "no/such/file.h5"}); }, {"MobileNetV3Large", "no/such/file.h5"});
}

// Keras's files, read from its download cache and never downloaded: always the 224 ones.
TEST(MobileNetV3, ImagenetFileNames) {
  const auto home = std::filesystem::temp_directory_path() / "keras_home_empty";
  ::setenv("KERAS_HOME", home.c_str(), 1);
  const std::string url = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/";
  expect_error<IOError>([] { MobileNetV3Small({.input_shape = {96, 96, 3}, .weights = "imagenet"}); },
                        {(home / "models" / "weights_mobilenet_v3_small_224_1.0_float.h5").string(),
                         url + "weights_mobilenet_v3_small_224_1.0_float.h5"});
  expect_error<IOError>([] { MobileNetV3Small({.alpha = 0.75, .include_top = false, .weights = "imagenet"}); },
                        {"weights_mobilenet_v3_small_224_0.75_float_no_top_v2.h5"});
  expect_error<IOError>([] { MobileNetV3Large({.minimalistic = true, .weights = "imagenet"}); },
                        {"weights_mobilenet_v3_large_minimalistic_224_1.0_float.h5"});
  expect_error<IOError>([] { MobileNetV3Large({.minimalistic = true, .include_top = false, .weights = "imagenet"}); },
                        {"weights_mobilenet_v3_large_minimalistic_224_1.0_float_no_top_v2.h5"});
  ::unsetenv("KERAS_HOME");
}

// The weights files tf_keras and Keras 3 wrote for the tiny fixture (seeded random weights, BN
// statistics included; tf_keras's layers are named Conv/BatchNorm, ... and its hard_swish is four
// layers) loaded by topology: the model predicts what Keras predicted on its pixels (1e-5).
TEST(MobileNetV3, LoadsKerasWeightsFilesByTopology) {
  expect_loads_keras_weights("tiny_mobilenet_v3_small", [](const std::string& file) {
    return applications::detail::MobileNetV3("small", 32, {.input_shape = {32, 32, 3}, .alpha = 0.1, .weights = file, .classes = 10});
  });
}

// Keras's placeholder: the input itself.
TEST(MobileNetV3, PreprocessInputIsTheIdentity) {
  const Tensor x = Tensor::from_vector(std::vector<float>{0, 127.5f, 255}, {1, 1, 1, 3});
  const Tensor y = mobilenet_v3::preprocess_input(x);
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(y.data<float>(), x.data<float>());
}
