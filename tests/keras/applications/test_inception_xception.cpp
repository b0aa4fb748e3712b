// keras::applications::InceptionV3 and Xception against real Keras 3.15 (tests/support/
// application_checks.h): config, layers and weights as Keras builds them (both lean on Keras's
// automatic names in creation order), pooling heads, their minimum sizes (preprocess_input:
// test_imagenet_utils.cpp).
#include <gtest/gtest.h>

#include "keras/applications/inception_v3.h"
#include "keras/applications/xception.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;

TEST(InceptionV3, IsKerasInceptionV3) {
  expect_family_is_keras<InceptionV3Options>({{"InceptionV3", InceptionV3}}, {75, 75, 3});
  EXPECT_EQ(InceptionV3({.include_top = false, .pooling = "avg"})->layers().back()->name(), "global_average_pooling2d");
  expect_error<ValueError>([] { InceptionV3({.input_shape = {74, 80, 3}}); }, {"InceptionV3", "at least 75x75"});
  expect_error<ValueError>([] { InceptionV3({.weights = "imagenet", .input_shape = {224, 224, 3}}); },
                           {"InceptionV3", "(299, 299, 3)"});
}

TEST(Xception, IsKerasXception) {
  expect_family_is_keras<XceptionOptions>({{"Xception", Xception}}, {71, 71, 3});
  expect_error<ValueError>([] { Xception({.input_shape = {70, 71, 3}}); }, {"Xception", "at least 71x71"});
  expect_error<ValueError>([] { Xception({.weights = "imagenet", .classes = 10}); }, {"Xception", "classes 1000"});
}
