// Elementwise ops: values against hand-computed results, broadcasting, dtypes, gradients
// (central differences in float64 for every differentiable op), errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/cpu/elementwise_kernels.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "support/gradcheck.h"

using namespace keras;
using keras::testing::check_gradients;

namespace {

Tensor F(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }
Tensor D(std::vector<double> v, Shape s) { return Tensor::from_vector<double>(v, s); }
std::vector<float> vals(const Tensor& t) { return t.contiguous().to_vector<float>(); }
std::vector<double> vals64(const Tensor& t) { return t.contiguous().to_vector<double>(); }
std::vector<bool> bools(const Tensor& t) { return t.contiguous().to_vector<bool>(); }

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Tensor rnd64(const Shape& s, uint64_t seed) { return random::normal(s, 0, 1, seed, DType::float64); }
Tensor pos64(const Shape& s, uint64_t seed) { return random::uniform(s, 0.5, 2.0, seed, DType::float64); }

}  // namespace

TEST(Elementwise, ArithmeticSameShape) {
  Tensor a = F({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = F({6, 5, 4, 3, 2, 1}, {2, 3});
  expect_near(vals(ops::add(a, b)), {7, 7, 7, 7, 7, 7});
  expect_near(vals(ops::subtract(a, b)), {-5, -3, -1, 1, 3, 5});
  expect_near(vals(ops::multiply(a, b)), {6, 10, 12, 12, 10, 6});
  expect_near(vals(ops::divide(a, b)), {1.f / 6, 2.f / 5, 3.f / 4, 4.f / 3, 5.f / 2, 6});
  expect_near(vals(ops::maximum(a, b)), {6, 5, 4, 4, 5, 6});
  expect_near(vals(ops::minimum(a, b)), {1, 2, 3, 3, 2, 1});
  expect_near(vals(ops::pow(a, b)), {1, 32, 81, 64, 25, 6}, 1e-4f);
  Tensor nan = F({NAN, 1}, {2}), one = F({0, NAN}, {2});
  for (const Tensor& m : {ops::maximum(nan, one), ops::minimum(nan, one)}) {
    EXPECT_TRUE(std::isnan(vals(m)[0]));
    EXPECT_TRUE(std::isnan(vals(m)[1]));
  }
  EXPECT_EQ(ops::add(a, b).shape(), (Shape{2, 3}));
}

TEST(Elementwise, Broadcasting) {
  Tensor a = F({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = F({10, 20, 30}, {3});
  Tensor r = ops::add(a, row);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  expect_near(vals(r), {11, 22, 33, 14, 25, 36});
  expect_near(vals(ops::subtract(row, a)), {9, 18, 27, 6, 15, 24});
  Tensor col = F({1, 2}, {2, 1});
  Tensor line = F({10, 20, 30}, {1, 3});
  Tensor outer = ops::multiply(col, line);
  EXPECT_EQ(outer.shape(), (Shape{2, 3}));
  expect_near(vals(outer), {10, 20, 30, 20, 40, 60});
  expect_near(vals(ops::add(col, line)), {11, 21, 31, 12, 22, 32});
  Tensor s = Tensor::scalar(2);
  expect_near(vals(ops::multiply(a, s)), {2, 4, 6, 8, 10, 12});
  expect_near(vals(ops::divide(s, a)), {2, 1, 2.f / 3, 0.5f, 0.4f, 1.f / 3});
  EXPECT_EQ(ops::add(s, s).shape(), Shape{});
  // A middle broadcast axis: (2,1,3) + (4,1) -> (2,4,3).
  Tensor x = F({0, 1, 2, 3, 4, 5}, {2, 1, 3});
  Tensor y = F({0, 10, 20, 30}, {4, 1});
  Tensor z = ops::add(x, y);
  EXPECT_EQ(z.shape(), (Shape{2, 4, 3}));
  auto zv = vals(z);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(zv[(i * 4 + j) * 3 + k], float(i * 3 + k + 10 * j));
}

TEST(Elementwise, StridedInputs) {
  Tensor t = Tensor::arange(0, 6).view({2, 3}).permuted();  // (3,2) view, not contiguous
  expect_near(vals(ops::add(t, F({100, 200}, {2}))), {100, 203, 101, 204, 102, 205});
}

TEST(Elementwise, LargeBroadcastMatchesNaiveLoop) {
  // Big enough for the parallel paths; odd extents so no chunk is a round number.
  Tensor a = random::normal({37, 1, 531}, 0, 1, uint64_t{1});
  Tensor b = random::normal({1, 29, 531}, 0, 1, uint64_t{2});
  Tensor c = ops::subtract(a, b);
  ASSERT_EQ(c.shape(), (Shape{37, 29, 531}));
  auto av = vals(a), bv = vals(b), cv = vals(c);
  for (int i = 0; i < 37; i += 5)
    for (int j = 0; j < 29; j += 3)
      for (int k = 0; k < 531; k += 7)
        ASSERT_EQ(cv[(i * 29 + j) * 531 + k], av[i * 531 + k] - bv[j * 531 + k]);
  Tensor big = random::normal({200000}, 0, 1, uint64_t{3});
  auto e = vals(ops::exp(big)), bg = vals(big);
  for (size_t i = 0; i < bg.size(); i += 997) EXPECT_NEAR(e[i], std::exp(bg[i]), 1e-5f * std::exp(bg[i]));
  // sum_to_shape over a large tensor, both the column and the row-reduce path.
  Tensor s = ops::sum_to_shape(c, {29, 531});
  Tensor s2 = ops::sum_to_shape(c, {37, 1, 1});
  auto sv = vals(s), s2v = vals(s2);
  for (int j = 0; j < 29; j += 4)
    for (int k = 0; k < 531; k += 50) {
      double want = 0;
      for (int i = 0; i < 37; ++i) want += cv[(i * 29 + j) * 531 + k];
      EXPECT_NEAR(sv[j * 531 + k], want, 1e-3);
    }
  for (int i = 0; i < 37; i += 6) {
    double want = 0;
    for (int k = 0; k < 29 * 531; ++k) want += cv[i * 29 * 531 + k];
    EXPECT_NEAR(s2v[i], want, 1e-2);
  }
}

TEST(Elementwise, OneDnnMathMatchesReference) {
  using cpu::UnaryMath;
  const int64_t n = cpu::kUnaryMathDnnlMin * 3 + 5;
  Tensor any = random::normal({n}, 0, 2, uint64_t{4});
  Tensor pos = random::uniform({n}, 1e-3, 50, uint64_t{5});
  for (auto [op, x] : {std::pair{UnaryMath::exp, any}, {UnaryMath::log, pos}, {UnaryMath::sqrt, pos}}) {
    Tensor fast = Tensor::empty(x.shape()), ref = Tensor::empty(x.shape());
    cpu::unary_math(op, x, fast);
    cpu::unary_math_reference(op, x, ref);
    auto f = vals(fast), r = vals(ref);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(f[i], r[i], 1e-5f * std::max(1.f, std::abs(r[i]))) << "op " << int(op) << " at " << i;
  }
}

TEST(Elementwise, IntegerDtypes) {
  Tensor a = Tensor::from_vector<int32_t>({1, -2, 3, 4}, {2, 2});
  Tensor b = Tensor::from_vector<int32_t>({10, 20}, {2});
  Tensor c = ops::add(a, b);
  EXPECT_EQ(c.dtype(), DType::int32);
  EXPECT_EQ(c.to_vector<int32_t>(), (std::vector<int32_t>{11, 18, 13, 24}));
  EXPECT_EQ(ops::multiply(a, b).to_vector<int32_t>(), (std::vector<int32_t>{10, -40, 30, 80}));
  EXPECT_EQ(ops::abs(a).to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(ops::sign(a).to_vector<int32_t>(), (std::vector<int32_t>{1, -1, 1, 1}));
  EXPECT_EQ((a * 2.0).to_vector<int32_t>(), (std::vector<int32_t>{2, -4, 6, 8}));
  EXPECT_EQ((a - 1.0).to_vector<int32_t>(), (std::vector<int32_t>{0, -3, 2, 3}));
  Tensor l = Tensor::from_vector<int64_t>({5, 7, 9}, {3});
  EXPECT_EQ(ops::add(l, Tensor::scalar(1, DType::int64)).to_vector<int64_t>(), (std::vector<int64_t>{6, 8, 10}));
  EXPECT_EQ(ops::maximum(l, Tensor::scalar(7, DType::int64)).to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 9}));
  EXPECT_EQ(bools(ops::equal(l, Tensor::scalar(7, DType::int64))), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(bools(ops::greater(a, Tensor::scalar(2, DType::int32))), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(ops::sum_to_shape(a, {2}).to_vector<int32_t>(), (std::vector<int32_t>{4, 2}));
}

TEST(Elementwise, Unary) {
  Tensor x = F({-2, -0.5f, 0.25f, 3}, {4});
  expect_near(vals(ops::negative(x)), {2, 0.5f, -0.25f, -3});
  expect_near(vals(-x), {2, 0.5f, -0.25f, -3});
  expect_near(vals(ops::square(x)), {4, 0.25f, 0.0625f, 9});
  expect_near(vals(ops::abs(x)), {2, 0.5f, 0.25f, 3});
  expect_near(vals(ops::sign(x)), {-1, -1, 1, 1});
  expect_near(vals(ops::sign(F({0}, {1}))), {0});
  expect_near(vals(ops::exp(x)), {std::exp(-2.f), std::exp(-0.5f), std::exp(0.25f), std::exp(3.f)}, 1e-5f);
  Tensor p = F({1, 4, 0.25f}, {3});
  expect_near(vals(ops::log(p)), {0, std::log(4.f), std::log(0.25f)});
  expect_near(vals(ops::sqrt(p)), {1, 2, 0.5f});
  expect_near(vals(ops::pow(p, 2.0)), {1, 16, 0.0625f});
  expect_near(vals(ops::pow(p, 0.5)), {1, 2, 0.5f});
  expect_near(vals(ops::pow(p, -1.0)), {1, 0.25f, 4});
  expect_near(vals(ops::pow(p, 3.0)), {1, 64, 1.f / 64}, 1e-5f);
  expect_near(vals(ops::clip(x, -1, 1)), {-1, -0.5f, 0.25f, 1});
  Tensor d = D({1, 4}, {2});
  EXPECT_EQ(ops::sqrt(d).dtype(), DType::float64);
  EXPECT_EQ(vals64(ops::sqrt(d)), (std::vector<double>{1, 2}));
}

TEST(Elementwise, ScalarFormsAndOperators) {
  Tensor a = F({1, 2, 4}, {3});
  Tensor b = F({2, 2, 2}, {3});
  expect_near(vals(ops::add(a, 1.5)), {2.5f, 3.5f, 5.5f});
  expect_near(vals(ops::multiply(a, -2)), {-2, -4, -8});
  expect_near(vals(a + b), {3, 4, 6});
  expect_near(vals(a - b), {-1, 0, 2});
  expect_near(vals(a * b), {2, 4, 8});
  expect_near(vals(a / b), {0.5f, 1, 2});
  expect_near(vals(a + 1.0), {2, 3, 5});
  expect_near(vals(a - 1.0), {0, 1, 3});
  expect_near(vals(a * 3.0), {3, 6, 12});
  expect_near(vals(a / 4.0), {0.25f, 0.5f, 1});
  expect_near(vals(1.0 + a), {2, 3, 5});
  expect_near(vals(10.0 - a), {9, 8, 6});
  expect_near(vals(3.0 * a), {3, 6, 12});
  expect_near(vals(8.0 / a), {8, 4, 2});
  Tensor d = D({1, 2}, {2});
  EXPECT_EQ((d * 0.5).dtype(), DType::float64);
  EXPECT_EQ(vals64(1.0 / d), (std::vector<double>{1, 0.5}));
}

TEST(Elementwise, ComparisonsAndWhere) {
  Tensor a = F({1, 2, 3}, {3});
  Tensor b = F({2, 2, 2}, {3});
  EXPECT_EQ(ops::equal(a, b).dtype(), DType::boolean);
  EXPECT_EQ(bools(ops::equal(a, b)), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(bools(ops::not_equal(a, b)), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(bools(ops::less(a, b)), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(bools(ops::less_equal(a, b)), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(bools(ops::greater(a, b)), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(bools(ops::greater_equal(a, b)), (std::vector<bool>{false, true, true}));
  Tensor m = ops::less(F({0, 5}, {2, 1}), F({1, 2, 3}, {3}));  // (2,3)
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(bools(m), (std::vector<bool>{true, true, true, false, false, false}));
  Tensor cond = Tensor::from_vector<bool>({true, false, true}, {3});
  expect_near(vals(ops::where(cond, a, b)), {1, 2, 3});
  expect_near(vals(ops::where(cond, F({9, 8}, {2, 1}), Tensor::scalar(0))), {9, 0, 9, 8, 0, 8});
  Tensor ints = ops::where(cond, Tensor::from_vector<int64_t>({1, 2, 3}), Tensor::scalar(-1, DType::int64));
  EXPECT_EQ(ints.to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 3}));
}

TEST(Elementwise, BroadcastToAndSumToShape) {
  Tensor r = ops::broadcast_to(F({1, 2, 3}, {3}), {2, 3});
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  expect_near(vals(r), {1, 2, 3, 1, 2, 3});
  expect_near(vals(ops::broadcast_to(F({1, 2}, {2, 1}), {2, 3})), {1, 1, 1, 2, 2, 2});
  expect_near(vals(ops::broadcast_to(Tensor::scalar(5), {2})), {5, 5});
  Tensor g = F({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_near(vals(ops::sum_to_shape(g, {3})), {5, 7, 9});
  expect_near(vals(ops::sum_to_shape(g, {1, 3})), {5, 7, 9});
  expect_near(vals(ops::sum_to_shape(g, {2, 1})), {6, 15});
  expect_near(vals(ops::sum_to_shape(g, {})), {21});
  Tensor empty = Tensor::zeros({0, 3});
  expect_near(vals(ops::sum_to_shape(empty, {3})), {0, 0, 0});
  EXPECT_EQ(ops::add(empty, F({1, 2, 3}, {3})).shape(), (Shape{0, 3}));
  EXPECT_EQ(ops::sum_to_shape(g, {1, 3}).shape(), (Shape{1, 3}));
  EXPECT_TRUE(ops::sum_to_shape(g, {2, 3}).same(g));
}

TEST(Elementwise, Cast) {
  Tensor a = F({1.5f, -2.7f, 3}, {3});
  Tensor i = ops::cast(a, DType::int32);
  EXPECT_EQ(i.dtype(), DType::int32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(ops::cast(a, DType::float64).dtype(), DType::float64);
  EXPECT_EQ(bools(ops::cast(F({0, 2}, {2}), DType::boolean)), (std::vector<bool>{false, true}));
  EXPECT_TRUE(ops::cast(a, DType::float32).same(a));
  // Integer results never join the tape.
  Tensor w = D({1.5, 2.5}, {2}).set_requires_grad(true);
  GradientTape tape;
  EXPECT_TRUE(ops::cast(w, DType::float32).requires_grad());
  EXPECT_FALSE(ops::cast(w, DType::int64).requires_grad());
}

// ---- gradients (float64, central differences) ----

TEST(ElementwiseGrad, BinaryArithmeticWithBroadcasting) {
  using L = TensorList;
  auto bin = [](Tensor (*op)(const Tensor&, const Tensor&)) {
    return [op](const L& x) { return op(x[0], x[1]); };
  };
  for (auto [name, f] : std::vector<std::pair<const char*, keras::testing::Fn>>{
           {"add", bin(ops::add)}, {"subtract", bin(ops::subtract)}, {"multiply", bin(ops::multiply)}}) {
    check_gradients(name, f, {rnd64({2, 3}, 1), rnd64({2, 3}, 2)});
    check_gradients(std::string(name) + " (2,3)+(3,)", f, {rnd64({2, 3}, 1), rnd64({3}, 2)});
    check_gradients(std::string(name) + " (2,1)+(1,3)", f, {rnd64({2, 1}, 3), rnd64({1, 3}, 4)});
    check_gradients(std::string(name) + " scalar", f, {rnd64({}, 5), rnd64({2, 2}, 6)});
  }
  check_gradients("divide", bin(ops::divide), {rnd64({2, 3}, 1), pos64({2, 3}, 2)});
  check_gradients("divide (2,1)/(1,3)", bin(ops::divide), {rnd64({2, 1}, 3), pos64({1, 3}, 4)});
  check_gradients("divide (3,)/(2,3)", bin(ops::divide), {rnd64({3}, 3), pos64({2, 3}, 4)});
  check_gradients("pow", bin(ops::pow), {pos64({2, 3}, 1), rnd64({2, 3}, 2)});
  check_gradients("pow (2,3)^(3,)", bin(ops::pow), {pos64({2, 3}, 1), rnd64({3}, 2)});
}

TEST(ElementwiseGrad, MaximumMinimum) {
  // Distinct values (no ties: the derivative does not exist there).
  Tensor a = D({0.1, -1.0, 2.0, 0.7, -0.3, 1.5}, {2, 3});
  Tensor b = D({0.5, -2.0, 1.0}, {3});
  check_gradients("maximum", [](const TensorList& x) { return ops::maximum(x[0], x[1]); }, {a, b});
  check_gradients("minimum", [](const TensorList& x) { return ops::minimum(x[0], x[1]); }, {a, b});
  // Ties split the gradient in half.
  Tensor p = D({1.0}, {1}).set_requires_grad(true), q = D({1.0}, {1}).set_requires_grad(true);
  GradientTape tape;
  TensorList g = tape.gradient(ops::maximum(p, q), {p, q});
  EXPECT_EQ(vals64(g[0]), (std::vector<double>{0.5}));
  EXPECT_EQ(vals64(g[1]), (std::vector<double>{0.5}));
}

TEST(ElementwiseGrad, Unary) {
  using L = TensorList;
  Tensor away_from_zero = D({-1.5, -0.4, 0.3, 0.8, 2.0, -0.9}, {2, 3});
  check_gradients("negative", [](const L& x) { return ops::negative(x[0]); }, {rnd64({2, 3}, 1)});
  check_gradients("exp", [](const L& x) { return ops::exp(x[0]); }, {rnd64({2, 3}, 1)});
  check_gradients("log", [](const L& x) { return ops::log(x[0]); }, {pos64({2, 3}, 1)});
  check_gradients("sqrt", [](const L& x) { return ops::sqrt(x[0]); }, {pos64({2, 3}, 1)});
  check_gradients("square", [](const L& x) { return ops::square(x[0]); }, {rnd64({2, 3}, 1)});
  check_gradients("abs", [](const L& x) { return ops::abs(x[0]); }, {away_from_zero});
  check_gradients("clip", [](const L& x) { return ops::clip(x[0], -1.0, 1.0); }, {away_from_zero});
  check_gradients("pow scalar 3", [](const L& x) { return ops::pow(x[0], 3.0); }, {rnd64({2, 3}, 1)});
  check_gradients("pow scalar -1.5", [](const L& x) { return ops::pow(x[0], -1.5); }, {pos64({2, 3}, 1)});
  check_gradients("pow scalar 0.5", [](const L& x) { return ops::pow(x[0], 0.5); }, {pos64({2, 3}, 1)});
  check_gradients("pow scalar 0", [](const L& x) { return ops::pow(x[0], 0.0); }, {pos64({2, 3}, 1)});
  check_gradients("sign (zero gradient)", [](const L& x) { return ops::sign(x[0]); }, {away_from_zero});
}

TEST(ElementwiseGrad, ScalarFormsAndOperators) {
  using L = TensorList;
  Tensor x = pos64({2, 3}, 1);
  check_gradients("add scalar", [](const L& v) { return ops::add(v[0], 2.5); }, {x});
  check_gradients("multiply scalar", [](const L& v) { return ops::multiply(v[0], -3.0); }, {x});
  check_gradients("x - s", [](const L& v) { return v[0] - 2.0; }, {x});
  check_gradients("x / s", [](const L& v) { return v[0] / 4.0; }, {x});
  check_gradients("s - x", [](const L& v) { return 2.0 - v[0]; }, {x});
  check_gradients("s / x", [](const L& v) { return 3.0 / v[0]; }, {x});
  check_gradients("s * x + s", [](const L& v) { return 3.0 * v[0] + 1.0; }, {x});
  check_gradients("operators", [](const L& v) { return (v[0] * v[1] - v[0]) / v[1] + (-v[0]); },
                  {rnd64({2, 3}, 2), pos64({3}, 3)});
}

TEST(ElementwiseGrad, WhereBroadcastToSumToShapeCast) {
  using L = TensorList;
  Tensor cond = Tensor::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  check_gradients("where", [](const L& v) { return ops::where(v[0], v[1], v[2]); },
                  {cond, rnd64({2, 3}, 1), rnd64({2, 3}, 2)});
  check_gradients("where broadcast", [](const L& v) { return ops::where(v[0], v[1], v[2]); },
                  {cond, rnd64({3}, 1), rnd64({2, 1}, 2)});
  check_gradients("broadcast_to", [](const L& v) { return ops::broadcast_to(v[0], {4, 2, 3}); }, {rnd64({2, 1}, 1)});
  check_gradients("sum_to_shape", [](const L& v) { return ops::sum_to_shape(v[0], {1, 3}); }, {rnd64({4, 2, 3}, 1)});
  check_gradients("sum_to_shape to scalar", [](const L& v) { return ops::sum_to_shape(v[0], {}); }, {rnd64({2, 3}, 1)});
  // float32 source: a float64 one would lose the finite-difference step in the float32 middle.
  check_gradients("cast f32->f64->f32",
                  [](const L& v) { return ops::cast(ops::multiply(ops::cast(v[0], DType::float64), 2.0), DType::float32); },
                  {random::normal({2, 3}, 0, 1, uint64_t{1})});
}

TEST(ElementwiseGrad, Float32) {
  using L = TensorList;
  Tensor a = random::normal({2, 3}, 0, 1, uint64_t{1});
  Tensor b = random::uniform({3}, 0.5, 2, uint64_t{2});
  check_gradients("divide f32", [](const L& v) { return ops::divide(v[0], v[1]); }, {a, b});
  check_gradients("multiply+exp f32", [](const L& v) { return ops::exp(ops::multiply(v[0], v[1])); }, {a, b});
}

TEST(ElementwiseGrad, NoGradientToConditionsOrComparisons) {
  Tensor a = D({1, 2, 3}, {3}).set_requires_grad(true);
  Tensor b = D({3, 2, 1}, {3}).set_requires_grad(true);
  GradientTape tape;
  Tensor c = ops::greater(a, b);
  EXPECT_FALSE(c.requires_grad());
  EXPECT_FALSE(c.grad_fn());
  EXPECT_FALSE(ops::sign(a).requires_grad());
  Tensor y = ops::where(c, a, b);
  EXPECT_TRUE(y.requires_grad());
  TensorList g = tape.gradient(y, {a, b, c});
  EXPECT_EQ(vals64(g[0]), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(vals64(g[1]), (std::vector<double>{1, 1, 0}));
  EXPECT_FALSE(g[2].defined());
}

// ---- errors ----

TEST(Elementwise, Errors) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4});
  try {
    ops::add(a, b);
    FAIL() << "no exception";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4,)"), std::string::npos) << m;
  }
  EXPECT_THROW(ops::multiply(Tensor::zeros({2, 3}), Tensor::zeros({3, 2})), ShapeError);
  EXPECT_THROW(a + b, ShapeError);
  EXPECT_THROW(ops::less(a, b), ShapeError);
  try {
    ops::add(a, Tensor::zeros({2, 3}, DType::float64));
    FAIL() << "no exception";
  } catch (const TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("float32"), std::string::npos) << m;
    EXPECT_NE(m.find("float64"), std::string::npos) << m;
  }
  Tensor ints = Tensor::zeros({3}, DType::int32);
  EXPECT_THROW(ops::divide(ints, ints), TypeError);
  EXPECT_THROW(ops::exp(ints), TypeError);
  EXPECT_THROW(ops::where(Tensor::zeros({3}), a, a), TypeError);  // float condition
  EXPECT_THROW(ops::where(Tensor::zeros({3}, DType::boolean), a, Tensor::zeros({2, 3}, DType::int32)), TypeError);
  EXPECT_THROW(ops::where(Tensor::zeros({4}, DType::boolean), a, a), ShapeError);
  EXPECT_THROW(ops::add(Tensor::zeros({2}, DType::boolean), Tensor::zeros({2}, DType::boolean)), TypeError);
  EXPECT_THROW(ops::broadcast_to(a, {3, 3}), ShapeError);
  EXPECT_THROW(ops::broadcast_to(a, {3}), ShapeError);
  EXPECT_THROW(ops::sum_to_shape(a, {4}), ShapeError);
  EXPECT_THROW(ops::sum_to_shape(a, {1, 2, 3}), ShapeError);
  EXPECT_THROW(ops::clip(a, 1, -1), ValueError);
}

TEST(Elementwise, SymbolicShapes) {
  auto out = infer_op("add", {{{-1, 3}, DType::float32}, {{3}, DType::float32}});
  EXPECT_EQ(out[0].shape, (Shape{-1, 3}));
  out = infer_op("multiply", {{{-1, 1}, DType::float32}, {{1, 5}, DType::float32}});
  EXPECT_EQ(out[0].shape, (Shape{-1, 5}));
  out = infer_op("greater", {{{-1, 4}, DType::float32}, {{-1, 4}, DType::float32}});
  EXPECT_EQ(out[0].dtype, DType::boolean);
  EXPECT_THROW(infer_op("add", {{{-1, 3}, DType::float32}, {{4}, DType::float32}}), ShapeError);
}
