// Squeeze-and-excite broadcasting in the merge layers (MobileNetV3, EfficientNet):
// Multiply()([x, s]) with x (N, H, W, C) and s (N, 1, 1, C), as Keras multiplies them, against a
// plain loop; the gradient of s sums over the broadcast axes (float64 central differences).
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/random.h"
#include "keras/keras.h"
#include "support/gradcheck.h"
#include "support/layer_harness.h"

using namespace keras;
namespace L = keras::layers;

namespace {
template <class Handle>
LayerPtr make() {
  return LayerPtr(Handle());
}
}  // namespace

TEST(MergeBroadcast, SqueezeExciteMultiplyMatchesLoops) {
  const int64_t n = 2, h = 3, w = 4, c = 5;
  Tensor x = random::normal({n, h, w, c}, 0, 1, uint64_t{1});
  Tensor s = random::normal({n, 1, 1, c}, 0, 1, uint64_t{2});
  Tensor y = L::Multiply()({x, s});
  ASSERT_EQ(y.shape(), (Shape{n, h, w, c}));
  auto xv = x.to_vector<float>(), sv = s.to_vector<float>(), yv = y.to_vector<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < h * w; ++i)
      for (int64_t k = 0; k < c; ++k) {
        const int64_t at = (b * h * w + i) * c + k;
        EXPECT_EQ(yv[at], xv[at] * sv[b * c + k]) << "at " << at;
      }
  // Either order, and the Keras 2 form of the same block (s first), give the same product.
  EXPECT_EQ(L::Multiply()({s, x}).to_vector<float>(), yv);
  // Symbolically: (None, 8, 8, 16) * (None, 1, 1, 16) -> (None, 8, 8, 16), as in MobileNetV3's config.
  auto kx = L::Input({8, 8, 16}), ks = L::Input({1, 1, 16});
  EXPECT_EQ(L::Multiply()({kx, ks}).shape, (Shape{-1, 8, 8, 16}));
  EXPECT_EQ(L::Add()({kx, ks}).shape, (Shape{-1, 8, 8, 16}));
}

TEST(MergeBroadcast, GradientSumsOverTheBroadcastAxes) {
  Tensor x = random::normal({2, 3, 2, 4}, 0, 1, uint64_t{3}, DType::float64);
  Tensor s = random::normal({2, 1, 1, 4}, 0, 1, uint64_t{4}, DType::float64);
  for (const char* cls : {"Multiply", "Add", "Subtract", "Average", "Maximum", "Minimum"}) {
    LayerPtr layer = layer_from_config(cls, json::object());
    keras::testing::check_gradients(std::string(cls) + " (N,H,W,C) with (N,1,1,C)",
                                    [&](const TensorList& in) { return (*layer)(in)[0]; }, {x, s});
  }
  // The gradient of s is a sum over H and W: its shape is s's.
  Tensor xs = x.clone().set_requires_grad(true), ss = s.clone().set_requires_grad(true);
  GradientTape tape;
  Tensor y = L::Multiply()({xs, ss});
  auto g = tape.gradient(ops::sum(y), {xs, ss});
  EXPECT_EQ(g[1].shape(), s.shape());
  EXPECT_NEAR(g[1].to_vector<double>()[0], ops::sum(x, {1, 2}).to_vector<double>()[0], 1e-12);
}

TEST(MergeBroadcast, Harness) {
  keras::testing::run_layer_harness({.name = "Multiply squeeze-excite", .make = make<L::Multiply>, .weight_shapes = {},
                                     .input_shapes = {{2, 4, 4, 3}, {2, 1, 1, 3}},
                                     .gradcheck_input_shapes = {{2, 2, 2, 3}, {2, 1, 1, 3}}});
}
