// UnitNormalization and GroupNormalization through the layer harness, and their defining
// properties (unit norms, per-group zero mean and unit variance, masks passing through);
// values against real Keras are in test_attention_keras_reference.cpp.
#include <gtest/gtest.h>

#include "layers/group_normalization.h"
#include "layers/unit_normalization.h"
#include "tests/support/layer_harness.h"

using namespace keras;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

TEST(UnitNormalizationHarness, LastAxisAndSeveralAxes) {
  run_layer_harness({
      .name = "UnitNormalization",
      .make = [] { return LayerPtr(L::UnitNormalization()); },
      .input_shape = {2, 3, 4},
      .weight_shapes = {},
  });
  run_layer_harness({
      .name = "UnitNormalization axes (1, 2)",
      .make = [] { return LayerPtr(L::UnitNormalization({.axis = {1, 2}, .axis_is_list = true})); },
      .input_shape = {2, 3, 4},
      .weight_shapes = {},
  });
}

TEST(UnitNormalization, UnitNormsZeroStaysZeroMaskPasses) {
  Tensor x = ops::concatenate({random::normal({1, 4}, 0.0, 3.0, uint64_t{1}), Tensor::zeros({1, 4})}, 0);
  x.set_keras_mask(ops::greater(Tensor::from_vector(std::vector<float>{1, 0}, {2}), Tensor::scalar(0.5)));
  Tensor y = L::UnitNormalization()(x);
  std::vector<float> v = y.to_vector<float>();
  double norm = 0;
  for (int i = 0; i < 4; ++i) norm += double(v[static_cast<size_t>(i)]) * v[static_cast<size_t>(i)];
  EXPECT_NEAR(norm, 1.0, 1e-6);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], 0.0f);
  EXPECT_TRUE(y.keras_mask().defined());
  EXPECT_THROW(L::UnitNormalization({.axis = {3}})(x), ShapeError);
}

TEST(GroupNormalizationHarness, GroupsAndInstance) {
  run_layer_harness({
      .name = "GroupNormalization groups 2",
      .make = [] { return LayerPtr(L::GroupNormalization({.groups = 2})); },
      .input_shape = {2, 3, 4},
      .weight_shapes = {{4}, {4}},
  });
  run_layer_harness({
      .name = "GroupNormalization instance, axis 1",
      .make = [] { return LayerPtr(L::GroupNormalization({.groups = -1, .axis = 1, .center = false})); },
      .input_shape = {2, 4, 3, 2},
      .weight_shapes = {{4}},
  });
}

TEST(GroupNormalization, NormalizesEachGroupOfEachSample) {
  Tensor x = ops::add(random::normal({2, 5, 6}, 0.0, 4.0, uint64_t{2}), 3.0);
  Tensor y = L::GroupNormalization({.groups = 3, .epsilon = 1e-6})(x);
  std::vector<float> v = y.to_vector<float>();
  for (int b = 0; b < 2; ++b)
    for (int g = 0; g < 3; ++g) {
      double sum = 0, sq = 0;
      for (int t = 0; t < 5; ++t)
        for (int c = 2 * g; c < 2 * g + 2; ++c) {
          double e = v[static_cast<size_t>((b * 5 + t) * 6 + c)];
          sum += e;
          sq += e * e;
        }
      EXPECT_NEAR(sum / 10, 0.0, 1e-5);
      EXPECT_NEAR(sq / 10, 1.0, 1e-3);
    }
  EXPECT_THROW(L::GroupNormalization({.groups = 4})(x), ValueError);  // 6 channels
  EXPECT_THROW(L::GroupNormalization({.groups = 0}), ValueError);
}
