// The residual block's fused BatchNormalization -> Add -> ReLU (backend/ops_batch_norm_relu.h):
// the same bits as batch_norm_training then add then relu in every dtype the fusion serves, both
// gradients (the masked one summing a second contribution), a float64 gradient check, the errors.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/ops_add_relu.h"
#include "backend/ops_batch_norm_relu.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// Activations with NaN and infinities among normal values (in the residual: x's would poison the
// statistics of its channel, which the plain path shares anyway).
Tensor residual_of(const Shape& shape, uint64_t seed, DType dtype) {
  std::vector<float> v = random::normal(shape, 0, 1, seed).to_vector<float>();
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), -0.f};
  for (size_t i = seed % 5; i < v.size(); i += 31) v[i] = special[(i / 31) % 4];
  return ops::cast(Tensor::from_vector(v, shape), dtype);
}

Tensor plain(const Tensor& x, const Tensor& r, const Tensor& gamma, const Tensor& beta) {
  return ops::relu(ops::add(ops::batch_norm_training(x, gamma, beta, 1e-3).y, r));
}

}  // namespace

TEST(BatchNormAddRelu, IsBatchNormThenAddThenReluBitForBit) {
  for (DType dtype : {DType::float32, DType::float64, DType::bfloat16}) {
    // One task of rows; threaded tasks with a channel tail (C = 20: a vector and a masked rest).
    for (const Shape& shape : {Shape{3, 5, 16}, Shape{64, 16, 16, 20}}) {
      const DType w = dtype == DType::bfloat16 ? DType::float32 : dtype;
      Tensor x = ops::cast(random::normal(shape, 0.5, 2, uint64_t{1}), dtype), r = residual_of(shape, 2, dtype);
      // Served where add_relu fuses (BatchNormalization's condition): bfloat16 only with its
      // kernels; without them one float32 pass would round once where the three ops round thrice.
      if (!ops::add_relu_fuses(x)) continue;
      Tensor gamma = random::normal({shape.back()}, 1, 0.5, uint64_t{3}, w), beta = random::normal({shape.back()}, 0, 1, uint64_t{4}, w);
      ops::BatchNormOutputs fused = ops::batch_norm_add_relu_training(x, r, gamma, beta, 1e-3);
      ops::BatchNormOutputs bn = ops::batch_norm_training(x, gamma, beta, 1e-3);
      EXPECT_TRUE(same_bits(fused.y, plain(x, r, gamma, beta))) << dtype_name(dtype) << " " << shape_str(shape);
      EXPECT_TRUE(same_bits(fused.mean, bn.mean) && same_bits(fused.variance, bn.variance)) << dtype_name(dtype);
    }
  }
}

TEST(BatchNormAddRelu, GradientsInDouble) {
  Tensor x = random::normal({4, 3, 5}, 0, 1, uint64_t{5}, DType::float64);
  Tensor r = random::normal({4, 3, 5}, 0, 1, uint64_t{6}, DType::float64);
  Tensor gamma = random::normal({5}, 1, 0.5, uint64_t{7}, DType::float64), beta = random::normal({5}, 0, 1, uint64_t{8}, DType::float64);
  keras::testing::check_gradients(
      "batch_norm_add_relu_train",
      [](const TensorList& t) { return ops::batch_norm_add_relu_training(t[0], t[1], t[2], t[3], 1e-3).y; },
      {x, r, gamma, beta});
}

// Against the separate ops' backward, bit for bit: one reader of the output, and two (a block's
// output feeding the next block's convolution and shortcut), which the fused gradient sums in
// its masking pass.
TEST(BatchNormAddRelu, GradientsMatchTheSeparateOpsBitForBit) {
  const Shape shape{16, 8, 8, 24};
  Tensor x = random::normal(shape, 0, 1, uint64_t{9}).set_requires_grad(true);
  Tensor r = random::normal(shape, 0, 1, uint64_t{10}).set_requires_grad(true);
  Tensor gamma = random::normal({24}, 1, 0.5, uint64_t{11}).set_requires_grad(true);
  Tensor beta = random::normal({24}, 0, 1, uint64_t{12}).set_requires_grad(true);
  Tensor w1 = random::normal(shape, 0, 1, uint64_t{13}), w2 = random::normal(shape, 0, 1, uint64_t{14});
  for (int readers : {1, 2}) {
    auto loss = [&](const Tensor& z) {
      Tensor l = ops::sum(ops::multiply(z, w1));
      return readers == 1 ? l : ops::add(l, ops::sum(ops::multiply(z, w2)));
    };
    TensorList fused, separate;
    {
      GradientTape tape;
      fused = tape.gradient(loss(ops::batch_norm_add_relu_training(x, r, gamma, beta, 1e-3).y), {x, r, gamma, beta});
    }
    {
      GradientTape tape;
      separate = tape.gradient(loss(plain(x, r, gamma, beta)), {x, r, gamma, beta});
    }
    const char* names[] = {"x", "residual", "gamma", "beta"};
    for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_bits(fused[i], separate[i])) << names[i] << ", " << readers << " readers";
  }
}

TEST(BatchNormAddRelu, ResidualMustMatchX) {
  Tensor x = Tensor::zeros({2, 3, 4}), gamma = Tensor::ones({4}), beta = Tensor::zeros({4});
  EXPECT_THROW(ops::batch_norm_add_relu_training(x, Tensor::zeros({2, 3, 5}), gamma, beta, 1e-3), ShapeError);
  EXPECT_THROW(ops::batch_norm_add_relu_training(x, Tensor::zeros({2, 3, 4}, DType::float64), gamma, beta, 1e-3), ShapeError);
  try {
    ops::batch_norm_add_relu_training(x, Tensor::zeros({2, 3, 5}), gamma, beta, 1e-3);
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_norm_add_relu_train"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(2, 3, 5)"), std::string::npos) << e.what();
  }
}

// BatchNormalization's moving statistics in one in-place op: the bits of multiply, multiply, add.
TEST(MovingAverageUpdate, IsMultiplyMultiplyAddInPlaceBitForBit) {
  for (DType dtype : {DType::float32, DType::float64}) {
    for (double momentum : {0.99, 0.9, 0.1}) {
      Tensor moving = random::normal({37}, 0, 3, uint64_t{20}, dtype), value = random::normal({37}, 1, 2, uint64_t{21}, dtype);
      Tensor want = ops::add(ops::multiply(moving, momentum), ops::multiply(value, 1.0 - momentum));
      const uint64_t version = moving.version();
      ops::moving_average_update(moving, value, momentum);
      EXPECT_TRUE(same_bits(moving, want)) << dtype_name(dtype) << " momentum " << momentum;
      EXPECT_GT(moving.version(), version);
    }
  }
  EXPECT_THROW(ops::moving_average_update(Tensor::zeros({3}), Tensor::zeros({4}), 0.9), TypeError);
  EXPECT_THROW(ops::moving_average_update(Tensor::zeros({3}), Tensor::zeros({3}, DType::float64), 0.9), TypeError);
  EXPECT_THROW(ops::moving_average_update(Tensor::zeros({3}, DType::bfloat16), Tensor::zeros({3}, DType::bfloat16), 0.9),
               TypeError);
}
