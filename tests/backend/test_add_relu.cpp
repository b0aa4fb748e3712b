// The fused residual add + ReLU op (backend/ops_add_relu.h): relu(add(a, b)) bit for bit in every
// floating dtype, its gradient, and the errors.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <limits>
#include <vector>

#include "backend/autodiff.h"
#include "backend/op_profile.h"
#include "backend/op_registry.h"
#include "backend/ops.h"
#include "backend/ops_add_relu.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;

namespace {

// Normal values with NaN, infinities and signed zeros mixed in; sums of opposite infinities too.
Tensor awkward(const Shape& shape, uint64_t seed, DType dtype) {
  Tensor t = random::normal(shape, 0, 1, seed);
  std::vector<float> v = t.to_vector<float>();
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), 0.f, -0.f};
  for (size_t i = seed % 7; i < v.size(); i += 29) v[i] = special[(i / 29 + seed) % 5];
  return ops::cast(Tensor::from_vector(v, shape), dtype);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

}  // namespace

TEST(AddRelu, IsReluOfAddBitForBit) {
  for (DType dtype : {DType::float32, DType::float64, DType::bfloat16}) {
    for (const Shape& shape : {Shape{3, 5}, Shape{64, 32, 32, 4}}) {  // one span, and threaded spans with a tail
      Tensor a = awkward(shape, 1, dtype), b = awkward(shape, 2, dtype);
      EXPECT_TRUE(same_bits(ops::add_relu(a, b), ops::relu(ops::add(a, b))))
          << dtype_name(dtype) << " " << shape_str(shape);
    }
  }
}

TEST(AddRelu, GradientsInDouble) {
  Tensor a = random::normal({2, 3, 4}, 0, 1, uint64_t{3}, DType::float64);
  Tensor b = random::normal({2, 3, 4}, 0, 1, uint64_t{4}, DType::float64);
  keras::testing::check_gradients("add_relu", [](const TensorList& t) { return ops::add_relu(t[0], t[1]); }, {a, b});
}

TEST(AddRelu, Float32GradientIsReluGradForBothInputs) {
  Tensor a = random::normal({4, 6}, 0, 1, uint64_t{5}).set_requires_grad(true);
  Tensor b = random::normal({4, 6}, 0, 1, uint64_t{6}).set_requires_grad(true);
  Tensor w = random::normal({4, 6}, 0, 1, uint64_t{7});
  GradientTape tape;
  Tensor y = ops::add_relu(a, b);
  TensorList g = tape.gradient(ops::sum(ops::multiply(y, w)), {a, b});
  Tensor want = run_op1(OpRegistry::instance().find("relu_grad"), {w, y}, Attrs{});
  EXPECT_TRUE(same_bits(g[0], want));
  EXPECT_TRUE(same_bits(g[1], want));
}

TEST(AddRelu, ShapesAndDtypesMustMatch) {
  EXPECT_THROW(ops::add_relu(Tensor::zeros({2, 3}), Tensor::zeros({1, 3})), ShapeError);
  EXPECT_THROW(ops::add_relu(Tensor::zeros({2, 3}), Tensor::zeros({2, 3}, DType::float64)), TypeError);
  EXPECT_THROW(ops::add_relu(Tensor::zeros({2}, DType::int32), Tensor::zeros({2}, DType::int32)), TypeError);
  try {
    ops::add_relu(Tensor::zeros({2, 3}), Tensor::zeros({1, 3}));
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("add_relu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(2, 3) and (1, 3)"), std::string::npos) << e.what();
  }
}

TEST(AddRelu, GradOfASumIsReluGradOfTheSumBitForBit) {
  static const OpDef& fused = OpRegistry::instance().find("add_relu_grad");
  static const OpDef& relu_grad = OpRegistry::instance().find("relu_grad");
  for (DType dtype : {DType::float32, DType::float64, DType::bfloat16}) {
    for (const Shape& shape : {Shape{3, 5}, Shape{64, 32, 32, 4}}) {
      Tensor g = awkward(shape, 3, dtype), h = awkward(shape, 4, dtype), y = ops::relu(awkward(shape, 5, dtype));
      EXPECT_TRUE(same_bits(run_op1(fused, {g, h, y}), run_op1(relu_grad, {ops::add(g, h), y})))
          << dtype_name(dtype) << " " << shape_str(shape);
    }
  }
  EXPECT_THROW(run_op1(fused, {Tensor::zeros({2}), Tensor::zeros({3}), Tensor::zeros({2})}), ShapeError);
  EXPECT_THROW(run_op1(fused, {Tensor::zeros({2}), Tensor::zeros({2}, DType::float64), Tensor::zeros({2})}), TypeError);
}

// The backward pass hands add_relu's gradient two contributions unsummed (OpDef::grad_sums_two):
// one add_relu_grad instead of add + relu_grad, the same bits; a third contribution, or a caller
// asking for the gradient of y itself, gets the whole sum.
TEST(AddRelu, TwoReadersOfTheOutputSumInTheGradientPass) {
  Tensor a = random::normal({8, 5}, 0, 1, uint64_t{8}).set_requires_grad(true);
  Tensor b = random::normal({8, 5}, 0, 1, uint64_t{9}).set_requires_grad(true);
  Tensor w1 = random::normal({8, 5}, 0, 1, uint64_t{10}), w2 = random::normal({8, 5}, 0, 1, uint64_t{11}),
         w3 = random::normal({8, 5}, 0, 1, uint64_t{12});
  for (int readers : {1, 2, 3}) {
    auto loss = [&](const Tensor& y) {
      Tensor l = ops::sum(ops::multiply(y, w1));
      if (readers > 1) l = ops::add(l, ops::sum(ops::multiply(y, w2)));
      if (readers > 2) l = ops::add(l, ops::sum(ops::square(ops::multiply(y, w3))));
      return l;
    };
    reset_op_profile();
    set_op_profiling(true);
    TensorList fused;
    {
      GradientTape tape;
      fused = tape.gradient(loss(ops::add_relu(a, b)), {a, b});
    }
    set_op_profiling(false);
    std::map<std::string, uint64_t> calls;
    for (const auto& e : op_profile()) calls[e.op] += e.calls;
    EXPECT_EQ(calls["add_relu_grad"], readers == 2 ? 1u : 0u) << readers << " readers";
    GradientTape tape;
    TensorList plain = tape.gradient(loss(ops::relu(ops::add(a, b))), {a, b});
    EXPECT_TRUE(same_bits(fused[0], plain[0]) && same_bits(fused[1], plain[1])) << readers << " readers";
  }
  // The gradient of y itself, asked for beside a's.
  GradientTape tape;
  Tensor y = ops::add_relu(a, b);
  TensorList g = tape.gradient(ops::add(ops::sum(ops::multiply(y, w1)), ops::sum(ops::multiply(y, w2))), {y, a});
  EXPECT_TRUE(same_bits(g[0], ops::add(w1, w2)));
  EXPECT_TRUE(same_bits(g[1], run_op1(OpRegistry::instance().find("relu_grad"), {ops::add(w1, w2), y})));
}

// Two-byte gradients whose sum overflows: add rounds it to inf (and relu_grad then gives NaN or 0
// where y <= 0, by dtype); the fused gradient must do the same, also where it would compute in
// float32 (float16, which has no kernels of its own).
TEST(AddRelu, TwoByteGradientSumsOverflowAsAddDoes) {
  for (auto [dtype, big] : {std::pair{DType::float16, 40000.0}, std::pair{DType::bfloat16, 2e38}}) {
    Tensor a = ops::cast(random::normal({6, 7}, 0, 1, uint64_t{13}), dtype).set_requires_grad(true);
    Tensor b = ops::cast(random::normal({6, 7}, 0, 1, uint64_t{14}), dtype).set_requires_grad(true);
    Tensor w = ops::cast(ops::multiply(Tensor::ones({6, 7}), big), dtype);
    auto grads = [&](bool fused) {
      GradientTape tape;
      Tensor y = fused ? ops::add_relu(a, b) : ops::relu(ops::add(a, b));
      return tape.gradient(ops::add(ops::sum(ops::multiply(y, w)), ops::sum(ops::multiply(y, w))), {a});
    };
    EXPECT_TRUE(same_bits(grads(true)[0], grads(false)[0])) << dtype_name(dtype);
  }
}
