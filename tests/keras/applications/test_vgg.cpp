// keras::applications::VGG16 / VGG19 against real Keras 3.15 (tests/support/application_checks.h):
// config, layers and weights as Keras builds them, pooling heads, argument errors
// (preprocess_input: test_imagenet_utils.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "keras/applications/vgg.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;

TEST(VGG, EveryVariantIsKeras) {
  expect_family_is_keras<VGGOptions>({{"VGG16", VGG16}, {"VGG19", VGG19}}, {32, 32, 3});
  // Keras's None input without the top: any size.
  EXPECT_EQ(VGG16({.include_top = false})->inputs()[0].shape, (Shape{-1, -1, -1, 3}));
  EXPECT_EQ(VGG16({.include_top = false, .pooling = "avg"})->outputs()[0].shape, (Shape{-1, 512}));
}

TEST(VGG, KerasArgumentChecks) {
  expect_error<ValueError>([] { VGG16({.weights = "/no/such/file.h5"}); }, {"VGG16", "weights", "/no/such/file.h5"});
  expect_error<ValueError>([] { VGG16({.weights = "imagenet", .classes = 10}); }, {"VGG16", "classes 1000", "got 10"});
  expect_error<ValueError>([] { VGG16({.input_shape = {31, 64, 3}}); }, {"VGG16", "at least 32x32", "(31, 64, 3)"});
  expect_error<ValueError>([] { VGG16({.input_shape = {64, 64}}); }, {"VGG16", "three integers"});
  expect_error<ValueError>([] { VGG16({.input_shape = {-1, -1, 3}}); }, {"VGG16", "static input_shape"});
  expect_error<ValueError>([] { VGG19({.include_top = false, .pooling = "mean"}); }, {"VGG19", "pooling", "\"mean\""});
  expect_error<ValueError>([] { VGG19({.input_shape = {32, 32, 3}, .classes = 0}); }, {"VGG19", "classes >= 1"});
  // Pretrained classifiers take softmax or linear only (Keras's validate_activation); random ones anything.
  const std::string file = (std::filesystem::temp_directory_path() / "keras_vgg_weights_stub.h5").string();
  std::ofstream(file) << "";
  expect_error<ValueError>([&] { VGG16({.weights = file, .input_shape = {32, 32, 3}, .classifier_activation = "relu"}); },
                           {"VGG16", "classifier_activation", "\"relu\""});
  std::filesystem::remove(file);
  auto relu = VGG16({.input_shape = {32, 32, 3}, .classes = 3, .classifier_activation = "relu"});
  EXPECT_EQ(relu->layers().back()->get_config()["activation"], "relu");
}
