// Resizing and CenterCrop: the layer harness, values against real Keras
// (tests/support/augment_reference.h, made by tests/data/keras/make_augment_reference.py),
// gradients to the input, rank-3 inputs and errors.
#include <gtest/gtest.h>

#include "layers/center_crop.h"
#include "layers/input_layer.h"
#include "layers/resizing.h"
#include "support/augment_checks.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
namespace ref = augment_reference;
using keras::testing::expect_close_to;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;

TEST(ResizingHarness, EveryMode) {
  // No weights; always applied, so every check applies (the gradient reaches the input).
  struct Case {
    std::string name;
    layers::ResizingOptions o;
  };
  std::vector<Case> cases = {
      {"bilinear down", {.height = 3, .width = 4}},
      {"bilinear up", {.height = 7, .width = 9}},
      {"nearest", {.height = 4, .width = 7, .interpolation = "nearest"}},
      {"crop_to_aspect_ratio", {.height = 3, .width = 3, .crop_to_aspect_ratio = true}},
      {"pad_to_aspect_ratio", {.height = 4, .width = 2, .pad_to_aspect_ratio = true, .fill_value = 1.5}},
  };
  for (const auto& c : cases) {
    run_layer_harness({.name = "Resizing " + c.name,
                       .make = [o = c.o] { return LayerPtr(layers::Resizing(o)); },
                       .input_shape = {2, 5, 6, 3},
                       .weight_shapes = {},
                       .gradcheck_input_shape = {1, 4, 5, 2}});
  }
}

TEST(CenterCropHarness, CropAndSmartResize) {
  run_layer_harness({.name = "CenterCrop crop",
                     .make = [] { return LayerPtr(layers::CenterCrop({.height = 3, .width = 2})); },
                     .input_shape = {2, 5, 6, 3},
                     .weight_shapes = {},
                     .gradcheck_input_shape = {1, 4, 5, 2}});
  run_layer_harness({.name = "CenterCrop larger than the image (resizes)",
                     .make = [] { return LayerPtr(layers::CenterCrop({.height = 6, .width = 4})); },
                     .input_shape = {2, 5, 6, 3},
                     .weight_shapes = {},
                     .gradcheck_input_shape = {1, 4, 5, 2}});
}

TEST(Resizing, MatchesKeras) {
  Tensor x = keras::testing::augment_input();
  expect_close_to(layers::Resizing({.height = 3, .width = 4})(x), ref::kResizeBilinear, "bilinear down");
  expect_close_to(layers::Resizing({.height = 7, .width = 8})(x), ref::kResizeBilinearUp, "bilinear up");
  expect_close_to(layers::Resizing({.height = 3, .width = 4, .interpolation = "nearest"})(x), ref::kResizeNearest, "nearest");
  expect_close_to(layers::Resizing({.height = 7, .width = 9, .interpolation = "nearest"})(x), ref::kResizeNearestUp, "nearest up");
  expect_close_to(layers::Resizing({.height = 4, .width = 3, .crop_to_aspect_ratio = true})(x), ref::kResizeCrop, "crop");
  expect_close_to(layers::Resizing({.height = 4, .width = 3, .pad_to_aspect_ratio = true, .fill_value = 9.0})(x),
               ref::kResizePad, "pad rows");
  expect_close_to(layers::Resizing({.height = 2, .width = 5, .pad_to_aspect_ratio = true, .fill_value = -2.0})(x),
               ref::kResizePadWide, "pad columns");
}

TEST(CenterCrop, MatchesKeras) {
  Tensor x = keras::testing::augment_input();
  expect_close_to(layers::CenterCrop({.height = 3, .width = 4})(x), ref::kCenterCrop, "crop");
  expect_close_to(layers::CenterCrop({.height = 4, .width = 8})(x), ref::kCenterCropBig, "wider than the image");
}

TEST(Resizing, AppliesInBothModesAndToOneImage) {
  Tensor x = keras::testing::augment_input();
  layers::Resizing r({.height = 3, .width = 4});
  auto inference = r(x, {.training = false}).to_vector<float>();
  EXPECT_EQ(r(x, {.training = true}).to_vector<float>(), inference);
  // A rank-3 image is resized as a batch of one.
  Tensor one = ops::slice(x, {1, 0, 0, 0}, {1, 5, 6, 2});
  Tensor y = r(ops::squeeze(one, 0));
  EXPECT_EQ(y.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(inference.begin() + 24, inference.end()));
  EXPECT_EQ(r->compute_output_shape({{5, 6, 2}})[0], (Shape{3, 4, 2}));
  EXPECT_EQ(layers::CenterCrop({.height = 2, .width = 3})->compute_output_shape({{-1, -1, -1, 2}})[0], (Shape{-1, 2, 3, 2}));
  // Symbolic: the Keras shape, whatever the input extents.
  auto k = layers::Resizing({.height = 8, .width = 8})(layers::Input({-1, -1, 3}));
  EXPECT_EQ(k.shape, (Shape{-1, 8, 8, 3}));
  // Integer pixels come out float32.
  Tensor ints = ops::cast(x, DType::int32);
  EXPECT_EQ(r(ints).dtype(), DType::float32);
}

TEST(Resizing, Errors) {
  expect_error<ValueError>([] { layers::Resizing({.height = 0, .width = 3}); }, {"Resizing", "height and width >= 1", "(0, 3)"});
  expect_error<ValueError>([] { layers::Resizing({.height = 2, .width = 3, .interpolation = "cubic"}); },
                           {"interpolation", "'cubic'"});
  expect_error<NotImplementedError>([] { layers::Resizing({.height = 2, .width = 3, .interpolation = "bicubic"}); },
                                    {"'bicubic'"});
  expect_error<ValueError>(
      [] { layers::Resizing({.height = 2, .width = 3, .crop_to_aspect_ratio = true, .pad_to_aspect_ratio = true}); },
      {"at most one of crop_to_aspect_ratio and pad_to_aspect_ratio"});
  expect_error<ValueError>([] { layers::Resizing({.height = 2, .width = 3, .fill_mode = "reflect"}); }, {"fill_mode"});
  expect_error<NotImplementedError>([] { layers::Resizing({.height = 2, .width = 3, .antialias = true}); }, {"antialias"});
  expect_error<NotImplementedError>([] { layers::Resizing({.height = 2, .width = 3, .data_format = "channels_first"}); },
                                    {"channels_first"});
  expect_error<ShapeError>([] { layers::Resizing({.height = 2, .width = 3})(Tensor::zeros({4, 5})); }, {"rank 3", "(4, 5)"});
  expect_error<ValueError>([] { layers::CenterCrop({.height = 2, .width = -1}); }, {"CenterCrop", "(2, -1)"});
  expect_error<ShapeError>([] { layers::CenterCrop({.height = 2, .width = 2})(Tensor::zeros({1, 2, 4, 5, 3})); }, {"rank 3"});
}
