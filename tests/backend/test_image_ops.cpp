// ops::affine_transform and ops::resize_nearest2d against real Keras (values in
// tests/support/augment_reference.h, made by tests/data/keras/make_augment_reference.py), their
// gradients and their errors.
#include <gtest/gtest.h>

#include "backend/ops_image.h"
#include "support/augment_checks.h"
#include "support/expect_error.h"
#include "support/gradcheck.h"

using namespace keras;
namespace ref = augment_reference;
using keras::testing::expect_close_to;
using keras::testing::expect_error;

namespace {

Tensor image() { return Tensor::from_vector(ref::kAffineImage, {1, 4, 5, 1}); }

}  // namespace

TEST(AffineTransform, EveryFillModeAndInterpolationMatchesKeras) {
  Tensor t = Tensor::from_vector(ref::kAffineRot30, {1, 8});
  const std::vector<std::tuple<std::string, std::string, const std::vector<float>*>> cases = {
      {"reflect", "bilinear", &ref::kAffine_reflect_bilinear}, {"reflect", "nearest", &ref::kAffine_reflect_nearest},
      {"wrap", "bilinear", &ref::kAffine_wrap_bilinear},       {"wrap", "nearest", &ref::kAffine_wrap_nearest},
      {"constant", "bilinear", &ref::kAffine_constant_bilinear}, {"constant", "nearest", &ref::kAffine_constant_nearest},
      {"nearest", "bilinear", &ref::kAffine_nearest_bilinear}, {"nearest", "nearest", &ref::kAffine_nearest_nearest},
  };
  for (const auto& [mode, interp, want] : cases) {
    Tensor y = ops::affine_transform(image(), t, interp, mode, 0.5);
    EXPECT_EQ(y.shape(), (Shape{1, 4, 5, 1}));
    expect_close_to(y.to_vector<float>(), *want, mode + "/" + interp, 2e-5f);
  }
}

TEST(AffineTransform, OneTransformPerImageIncludingProjective) {
  Tensor x = Tensor::from_vector(ref::kAffineBatch, {2, 4, 5, 1});
  Tensor t = Tensor::from_vector(ref::kAffineBatchT, {2, 8});
  expect_close_to(ops::affine_transform(x, t, "bilinear", "reflect").to_vector<float>(), ref::kAffineBatch_reflect, "reflect", 2e-5f);
  expect_close_to(ops::affine_transform(x, t, "bilinear", "wrap").to_vector<float>(), ref::kAffineBatch_wrap, "wrap", 2e-5f);
  // A rank-1 transform and a (1, 8) one apply to every image; float64 transforms are cast.
  Tensor first = ops::slice(t, {0, 0}, {1, 8});
  Tensor shared = ops::affine_transform(x, ops::reshape(first, {8}), "bilinear", "reflect");
  Tensor image0 = ops::slice(shared, {0, 0, 0, 0}, {1, 4, 5, 1});
  expect_close_to(image0.to_vector<float>(), std::vector<float>(ref::kAffineBatch_reflect.begin(), ref::kAffineBatch_reflect.begin() + 20), "shared", 2e-5f);
  Tensor x64 = ops::cast(x, DType::float64);
  Tensor y64 = ops::affine_transform(x64, ops::cast(t, DType::float64), "bilinear", "wrap");
  EXPECT_EQ(y64.dtype(), DType::float64);
  expect_close_to(ops::cast(y64, DType::float32).to_vector<float>(), ref::kAffineBatch_wrap, "float64", 2e-5f);
}

TEST(AffineTransform, IdentityAndChannels) {
  // The identity transform returns the image exactly, every channel alike.
  Tensor x = random::normal({2, 3, 4, 5}, 0, 1, uint64_t{3});
  Tensor id = Tensor::from_vector(std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0}, {1, 8});
  for (const char* interp : {"bilinear", "nearest"})
    EXPECT_EQ(ops::affine_transform(x, id, interp, "constant").to_vector<float>(), x.to_vector<float>()) << interp;
  // A projective row with k = 1 - x is 0 in column 1: those pixels are fill_value.
  Tensor k0 = Tensor::from_vector(std::vector<float>{1, 0, 0, 0, 1, 0, -1, 0}, {1, 8});
  Tensor y = ops::affine_transform(x, k0, "bilinear", "reflect", 7.0);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(ops::slice(y, {0, i, 1, 0}, {2, 1, 1, 5}).to_vector<float>(), std::vector<float>(10, 7.0f)) << i;
}

TEST(AffineTransform, Errors) {
  Tensor t = Tensor::from_vector(ref::kAffineRot30, {1, 8});
  expect_error<ValueError>([&] { ops::affine_transform(image(), t, "bilinear", "mirror"); }, {"fill_mode", "'mirror'"});
  expect_error<ValueError>([&] { ops::affine_transform(image(), t, "bicubic", "reflect"); }, {"interpolation", "'bicubic'"});
  expect_error<ValueError>([&] { ops::affine_transform(image(), Tensor::zeros({1, 6})); }, {"transforms of shape", "(1, 6)"});
  expect_error<ValueError>([&] { ops::affine_transform(image(), Tensor::zeros({3, 8})); }, {"(1, 8)", "(3, 8)"});
  expect_error<ShapeError>([&] { ops::affine_transform(Tensor::zeros({4, 5}), t); }, {"rank 4"});
}

TEST(AffineTransform, CarriesNoGradient) {
  Tensor x = image().clone();
  x.set_requires_grad(true);
  Tensor y = ops::affine_transform(x, Tensor::from_vector(ref::kAffineRot30, {1, 8}));
  EXPECT_FALSE(y.requires_grad());
}

TEST(ResizeNearest, MatchesKerasDownAndUp) {
  Tensor x = keras::testing::augment_input();
  expect_close_to(ops::resize_nearest2d(x, {3, 4}), ref::kResizeNearest, "down", 0);
  expect_close_to(ops::resize_nearest2d(x, {7, 9}), ref::kResizeNearestUp, "up", 0);
}

TEST(ResizeNearest, GradientIsTheScatteredSum) {
  Tensor x = random::normal({2, 5, 4, 3}, 0, 1, uint64_t{5}, DType::float64);
  for (ops::Size2 size : {ops::Size2{3, 7}, ops::Size2{8, 2}}) {
    keras::testing::check_gradients("resize_nearest2d", [&](const TensorList& in) { return ops::resize_nearest2d(in[0], size); }, {x});
  }
  expect_error<ValueError>([&] { ops::resize_nearest2d(x, {0, 2}); }, {"size"});
  expect_error<ShapeError>([&] { ops::resize_nearest2d(Tensor::zeros({5, 4, 3}), {2, 2}); }, {"rank 4"});
}
