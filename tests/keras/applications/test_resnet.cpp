// keras::applications::ResNet50/101/152 and ResNet50V2/101V2/152V2 against real Keras 3.15
// (tests/support/application_checks.h): config, layers and weights as Keras builds them,
// pooling heads, argument errors (preprocess_input: test_imagenet_utils.cpp).
#include <gtest/gtest.h>

#include "keras/applications/resnet.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;

TEST(ResNet, EveryVariantIsKeras) {
  expect_family_is_keras<ResNetOptions>({{"ResNet50", ResNet50}, {"ResNet101", ResNet101}, {"ResNet152", ResNet152},
                                         {"ResNet50V2", ResNet50V2}, {"ResNet101V2", ResNet101V2},
                                         {"ResNet152V2", ResNet152V2}},
                                        {32, 32, 3});
  auto any_size = ResNet50V2({.include_top = false, .pooling = "max"});
  EXPECT_EQ(any_size->outputs()[0].shape, (Shape{-1, 2048}));
  EXPECT_EQ(any_size->layers().back()->name(), "max_pool");  // Keras names ResNet's pooling heads
}

TEST(ResNet, KerasArgumentChecks) {
  expect_error<ValueError>([] { ResNet50({.weights = "missing.h5"}); }, {"ResNet50", "weights", "missing.h5"});
  expect_error<ValueError>([] { ResNet101({.weights = "imagenet", .classes = 5}); }, {"ResNet101", "classes 1000"});
  expect_error<ValueError>([] { ResNet152V2({.weights = "imagenet", .input_shape = {200, 200, 3}}); },
                           {"ResNet152V2", "(224, 224, 3)", "(200, 200, 3)"});
  expect_error<ValueError>([] { ResNet50V2({.include_top = false, .weights = "imagenet", .input_shape = {64, 64, 1}}); },
                           {"ResNet50V2", "3 channels"});
  expect_error<ValueError>([] { ResNet50({.input_shape = {16, 16, 3}}); }, {"ResNet50", "at least 32x32"});
}
