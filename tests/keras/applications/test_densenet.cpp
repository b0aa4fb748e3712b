// keras::applications::DenseNet121/169/201 against real Keras 3.15 (tests/support/
// application_checks.h): config, layers and weights as Keras builds them, pooling heads,
// argument errors (preprocess_input: test_imagenet_utils.cpp).
#include <gtest/gtest.h>

#include "keras/applications/densenet.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;

TEST(DenseNet, EveryVariantIsKeras) {
  expect_family_is_keras<DenseNetOptions>(
      {{"DenseNet121", DenseNet121}, {"DenseNet169", DenseNet169}, {"DenseNet201", DenseNet201}}, {32, 32, 3});
}

TEST(DenseNet, KerasArgumentChecks) {
  expect_error<ValueError>([] { DenseNet121({.weights = "nope.h5"}); }, {"DenseNet121", "weights", "nope.h5"});
  expect_error<ValueError>([] { DenseNet169({.weights = "imagenet", .classes = 2}); }, {"DenseNet169", "classes 1000"});
  expect_error<ValueError>([] { DenseNet201({.input_shape = {32, 20, 3}}); }, {"DenseNet201", "at least 32x32"});
}
