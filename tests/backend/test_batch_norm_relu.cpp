// The fused BatchNormalization -> ReLU / ReLU6 training ops (backend/ops_batch_norm_relu.h):
// forward and gradients equal to batch_norm_training followed by the activation, float64
// gradient checks, the float32 kernel against the double loops on the same values, and the ReLU
// pass gone from a taped step.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "backend/autodiff.h"
#include "backend/cpu/norm_reference.h"
#include "backend/op_profile.h"
#include "backend/ops_batch_norm_relu.h"
#include "backend/random.h"
#include "support/expect_error.h"
#include "tests/support/gradcheck.h"
#include "tests/support/tensor_compare.h"

using namespace keras;
using keras::testing::check_gradients;
using keras::testing::relative_error;

namespace {

struct Inputs {
  Tensor x, gamma, beta;
};

// gamma around 3 so that ReLU6 clips some outputs, beta around 0.5 so that ReLU zeroes others.
Inputs inputs_of(const Shape& s, uint64_t seed, DType dtype = DType::float32) {
  const int64_t C = s.back();
  return {random::normal(s, 0.3, 1.5, seed, dtype), random::normal({C}, 3, 0.5, seed + 1, dtype),
          random::normal({C}, 0.5, 1, seed + 2, dtype)};
}

Tensor to64(const Tensor& t) { return t.astype(DType::float64); }

}  // namespace

TEST(BatchNormRelu, ForwardIsBatchNormThenTheActivation) {
  for (const char* act : {"relu", "relu6"})
    for (DType dtype : {DType::float32, DType::float64}) {
      SCOPED_TRACE(std::string(act) + " " + dtype_name(dtype));
      Inputs in = inputs_of({6, 9, 7, 5}, 10, dtype);
      auto fused = ops::batch_norm_relu_training(in.x, in.gamma, in.beta, 1e-3, act);
      auto plain = ops::batch_norm_training(in.x, in.gamma, in.beta, 1e-3);
      EXPECT_LT(relative_error(fused.y, ops::activation(act, plain.y)), 1e-6);
      EXPECT_EQ(relative_error(fused.mean, plain.mean), 0.0);
      EXPECT_EQ(relative_error(fused.variance, plain.variance), 0.0);
      const double top = element_as_double(ops::max(fused.y), 0);
      if (std::string(act) == "relu6") EXPECT_EQ(top, 6.0) << "the clip is not reached";
      EXPECT_EQ(element_as_double(ops::min(fused.y), 0), 0.0);
    }
}

// A NaN in a channel makes that channel's statistics NaN: the fused op passes NaN on, as
// batch_norm_training followed by the project's ReLU does (it does not hide it as 0).
TEST(BatchNormRelu, NaNIsKept) {
  for (const char* act : {"relu", "relu6"}) {
    Inputs in = inputs_of({4, 6}, 80);
    std::vector<float> x = in.x.to_vector<float>();
    x[7] = std::numeric_limits<float>::quiet_NaN();  // channel 1
    const Tensor xn = Tensor::from_vector(x, in.x.shape());
    std::vector<float> y = ops::batch_norm_relu_training(xn, in.gamma, in.beta, 1e-3, act).y.to_vector<float>();
    std::vector<float> ref = ops::activation(act, ops::batch_norm_training(xn, in.gamma, in.beta, 1e-3).y).to_vector<float>();
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(std::isnan(y[i]), std::isnan(ref[i])) << act << " " << i;
    EXPECT_TRUE(std::isnan(y[1])) << act;
  }
}

TEST(BatchNormRelu, GradientsInDouble) {
  for (const Shape& shape : std::vector<Shape>{{2, 3, 2, 3}, {5, 4}})
    for (const char* act : {"relu", "relu6"}) {
      SCOPED_TRACE(shape_str(shape) + " " + act);
      Inputs in = inputs_of(shape, 40, DType::float64);
      const std::string a = act;
      check_gradients("batch_norm_relu_training", [a](const TensorList& t) {
        return ops::batch_norm_relu_training(t[0], t[1], t[2], 1e-3, a).y;
      }, {in.x, in.gamma, in.beta});
    }
}

// The float32 kernel (masked block sums, folded factors) against the double loops on the same
// values, at sizes that run in parallel with partial blocks.
TEST(BatchNormRelu, Float32BackwardMatchesTheDoubleLoops) {
  for (const Shape& s : std::vector<Shape>{{9, 31, 37, 5}, {4, 33, 33, 64}})
    for (double hi : {6.0, std::numeric_limits<double>::infinity()}) {
      SCOPED_TRACE(shape_str(s) + " hi " + std::to_string(hi));
      const int64_t C = s.back();
      Inputs in = inputs_of(s, 50);
      Tensor g = random::normal(s, 0, 1, uint64_t{53});
      Tensor mean = Tensor::empty({C}), var = Tensor::empty({C});
      cpu::batch_moments(in.x, mean, var);
      Tensor dx = Tensor::empty(s), dg = Tensor::empty({C}), db = Tensor::empty({C});
      cpu::batch_norm_relu_backward(g, in.x, in.gamma, in.beta, mean, var, 1e-3, hi, dx, dg, db);
      Tensor dxr = Tensor::empty(s, DType::float64), dgr = Tensor::empty({C}, DType::float64);
      Tensor dbr = Tensor::empty({C}, DType::float64);
      cpu::batch_norm_relu_backward(to64(g), to64(in.x), to64(in.gamma), to64(in.beta), to64(mean), to64(var), 1e-3, hi, dxr,
                                    dgr, dbr);
      EXPECT_LT(relative_error(dx, dxr), 1e-5);
      EXPECT_LT(relative_error(dg, dgr), 1e-5);
      EXPECT_LT(relative_error(db, dbr), 1e-5);
    }
}

// Under a tape the fused op gives the composition's gradients, and no ReLU op runs either way.
TEST(BatchNormRelu, TapedStepMatchesTheCompositionWithoutAReLUPass) {
  for (const char* act : {"relu", "relu6"}) {
    SCOPED_TRACE(act);
    Inputs in = inputs_of({4, 8, 8, 16}, 60);
    Tensor w = random::normal({4, 8, 8, 16}, 0, 1, uint64_t{63});
    auto grads_of = [&](bool fused) {
      TensorList vars{in.x.clone().set_requires_grad(true), in.gamma.clone().set_requires_grad(true),
                      in.beta.clone().set_requires_grad(true)};
      GradientTape tape;
      Tensor y = fused ? ops::batch_norm_relu_training(vars[0], vars[1], vars[2], 1e-3, act).y
                       : ops::activation(act, ops::batch_norm_training(vars[0], vars[1], vars[2], 1e-3).y);
      return tape.gradient(ops::sum(ops::multiply(y, w)), vars);
    };
    reset_op_profile();
    set_op_profiling(true);
    TensorList fused = grads_of(true);
    set_op_profiling(false);
    std::map<std::string, uint64_t> calls;
    for (const auto& e : op_profile()) calls[e.op] += e.calls;
    EXPECT_EQ(calls["batch_norm_relu_train_grad"], 1u);
    EXPECT_EQ(calls["batch_norm_train_grad"], 0u);
    for (const auto& [op, n] : calls)
      if (op.find("relu") != std::string::npos && op.rfind("batch_norm_relu", 0) != 0) ADD_FAILURE() << op << " ran";
    TensorList plain = grads_of(false);
    for (size_t i = 0; i < 3; ++i) EXPECT_LT(relative_error(fused[i], plain[i]), 1e-5) << i;
  }
}

TEST(BatchNormRelu, OtherActivationsAreRefused) {
  Inputs in = inputs_of({2, 3}, 70);
  keras::testing::expect_error<ValueError>([&] { ops::batch_norm_relu_training(in.x, in.gamma, in.beta, 1e-3, "gelu"); },
                                           {"batch_norm_relu_train", "activation relu or relu6", "'gelu'"});
}
