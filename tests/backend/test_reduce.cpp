// Reductions: fast kernels against the naive reference for many axis sets, dtypes and keepdims;
// gradients in double; tie handling of max/min; argmax/argmin; errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/cpu/reference_linalg.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;
using cpu::ReduceKind;

namespace {

double max_rel_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), b.dtype());
  if (a.shape() != b.shape()) return 1e300;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = element_as_double(a, i), y = element_as_double(b, i);
    m = std::max(m, std::abs(x - y) / std::max(1.0, std::abs(y)));
  }
  return m;
}

Tensor run(ReduceKind k, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  switch (k) {
    case ReduceKind::sum: return ops::sum(x, axes, keepdims);
    case ReduceKind::mean: return ops::mean(x, axes, keepdims);
    case ReduceKind::max: return ops::max(x, axes, keepdims);
    case ReduceKind::min: return ops::min(x, axes, keepdims);
  }
  return {};
}

const char* kind_name(ReduceKind k) {
  static const char* names[] = {"sum", "mean", "max", "min"};
  return names[static_cast<int>(k)];
}

const std::vector<ReduceKind> kKinds = {ReduceKind::sum, ReduceKind::mean, ReduceKind::max, ReduceKind::min};

std::string axes_str(const std::vector<int64_t>& axes) {
  std::string s = "{";
  for (auto a : axes) s += std::to_string(a) + ",";
  return s + "}";
}

}  // namespace

TEST(Reduce, MatchesReferenceManyAxes) {
  const std::vector<std::pair<Shape, std::vector<std::vector<int64_t>>>> cases = {
      {{2, 3, 4, 5}, {{}, {0}, {1}, {3}, {-1}, {0, 2}, {1, 3}, {0, 3}, {0, 1, 2, 3}, {2, 1}}},
      {{128, 512}, {{0}, {1}, {}}},
      {{3, 1, 4}, {{1}, {0, 1}, {2}}},
      {{7}, {{0}, {}}},
      {{300, 3}, {{0}}},
  };
  for (DType dt : {DType::float32, DType::float64}) {
    double tol = dt == DType::float32 ? 1e-5 : 1e-12;
    for (const auto& [shape, axes_list] : cases) {
      Tensor x = random::normal(shape, 0, 1, uint64_t{3}, dt);
      for (const auto& axes : axes_list)
        for (bool keep : {false, true})
          for (ReduceKind k : kKinds)
            EXPECT_LT(max_rel_diff(run(k, x, axes, keep), cpu::reference_reduce(x, axes, keep, k)), tol)
                << kind_name(k) << " " << shape_str(shape) << " axes " << axes_str(axes) << " keepdims " << keep
                << " " << dtype_name(dt);
    }
  }
}

TEST(Reduce, IntegerAndBoolDtypes) {
  Tensor xi = Tensor::from_vector<int32_t>({1, -2, 3, 4, 5, -6}, {2, 3});
  EXPECT_EQ(ops::sum(xi, {1}).to_vector<int32_t>(), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(ops::max(xi, {0}).to_vector<int32_t>(), (std::vector<int32_t>{4, 5, 3}));
  EXPECT_EQ(ops::min(xi).to_vector<int32_t>(), (std::vector<int32_t>{-6}));
  Tensor m = ops::mean(xi, {0});
  EXPECT_EQ(m.dtype(), DType::float32);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2.5f, 1.5f, -1.5f}));
  Tensor xb = Tensor::from_vector<bool>({true, false, true}, {3});
  EXPECT_EQ(ops::sum(xb).item(), 2.0);
  EXPECT_EQ(ops::sum(Tensor::scalar(3.0)).item(), 3.0);
  EXPECT_EQ(ops::sum(Tensor::scalar(3.0)).shape(), Shape{});
}

TEST(Reduce, LongSumsStayAccurate) {
  Tensor ones = Tensor::ones({1 << 20});
  EXPECT_EQ(ops::sum(ones).item(), double(1 << 20));
  Tensor tenth = Tensor::full({1000, 1000}, 0.1);
  EXPECT_NEAR(ops::mean(tenth).item(), 0.1, 1e-7);
  EXPECT_NEAR(ops::sum(tenth).item(), 1e5, 1e-2);
}

TEST(Reduce, NanAndInfinity) {
  std::vector<float> v(37, 1.0f);
  v[20] = NAN;
  Tensor x = Tensor::from_vector(v);
  EXPECT_TRUE(std::isnan(ops::max(x).item()));
  EXPECT_TRUE(std::isnan(ops::min(x).item()));
  EXPECT_TRUE(std::isnan(ops::max(x.view({37, 1}), {0}).item()));
  v[20] = INFINITY;
  v[3] = -INFINITY;
  x = Tensor::from_vector(v);
  EXPECT_EQ(ops::max(x).item(), INFINITY);
  EXPECT_EQ(ops::min(x).item(), -INFINITY);
}

TEST(Reduce, EmptyAndErrors) {
  EXPECT_EQ(ops::sum(Tensor::zeros({0, 3}), {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(std::isnan(ops::mean(Tensor::zeros({0})).item()));
  EXPECT_THROW(ops::max(Tensor::zeros({0, 3}), {0}), ValueError);
  EXPECT_THROW(ops::sum(Tensor::zeros({2, 3}), {2}), IndexError);
  EXPECT_THROW(ops::sum(Tensor::zeros({2, 3}), {1, -1}), ValueError);
  EXPECT_THROW(ops::argmax(Tensor::zeros({2, 3}), 2), IndexError);
}

TEST(Reduce, Gradients) {
  const std::vector<std::vector<int64_t>> axes_list = {{}, {0}, {2}, {0, 2}, {1, -1}};
  for (ReduceKind k : kKinds)
    for (const auto& axes : axes_list)
      for (bool keep : {false, true}) {
        Tensor x = random::normal({2, 3, 4}, 0, 1, uint64_t{21}, DType::float64);
        keras::testing::check_gradients(std::string(kind_name(k)) + " axes " + axes_str(axes) + " keepdims " +
                                     std::to_string(keep),
                                 [&](const TensorList& in) { return run(k, in[0], axes, keep); }, {x});
      }
}

TEST(Reduce, GradientFloat32) {
  Tensor x = random::normal({16, 8}, 0, 1, uint64_t{22});
  keras::testing::check_gradients("sum f32", [](const TensorList& in) { return ops::sum(in[0], {0}); }, {x});
  keras::testing::check_gradients("mean f32", [](const TensorList& in) { return ops::mean(in[0], {1}, true); }, {x});
}

TEST(Reduce, MaxTiesSplitGradientEqually) {
  Tensor x = Tensor::from_vector<float>({1, 3, 3, 2, 5, 0}, {2, 3}).set_requires_grad(true);
  GradientTape tape;
  Tensor y = ops::max(x, {1});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5}));
  TensorList g = tape.gradient(y, {x});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{0, 0.5f, 0.5f, 0, 1, 0}));
}

TEST(Reduce, MinAllTies) {
  Tensor x = Tensor::full({2, 2}, 4.0, DType::float64).set_requires_grad(true);
  GradientTape tape;
  TensorList g = tape.gradient(ops::min(x), {x});
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
}

TEST(ArgReduce, MatchesReference) {
  Tensor x = random::normal({3, 4, 5}, 0, 1, uint64_t{31});
  for (int axis : {0, 1, 2, -1}) {
    Tensor am = ops::argmax(x, axis), an = ops::argmin(x, axis);
    EXPECT_EQ(am.dtype(), DType::int64);
    EXPECT_EQ(am.to_vector<int64_t>(), cpu::reference_arg_reduce(x, axis, true).to_vector<int64_t>()) << axis;
    EXPECT_EQ(an.to_vector<int64_t>(), cpu::reference_arg_reduce(x, axis, false).to_vector<int64_t>()) << axis;
  }
  Tensor ties = Tensor::from_vector<int64_t>({2, 7, 7, 1, 1, 0}, {2, 3});
  EXPECT_EQ(ops::argmax(ties).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));  // first occurrence
  EXPECT_EQ(ops::argmin(ties, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  Tensor big = random::normal({128, 512}, 0, 1, uint64_t{32}, DType::float64);
  EXPECT_EQ(ops::argmax(big, 0).to_vector<int64_t>(), cpu::reference_arg_reduce(big, 0, true).to_vector<int64_t>());
}
