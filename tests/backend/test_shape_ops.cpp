// Shape ops: values against hand-computed results (and a naive reference for transposes large
// enough to reach the tiled path), float64 gradient checks, and the error messages.
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "support/gradcheck.h"

using namespace keras;
using keras::testing::check_gradients;

namespace {

Tensor iota(const Shape& shape, DType dtype = DType::float32) {
  return ops::reshape(Tensor::arange(0, static_cast<double>(shape_numel(shape)), 1, dtype), shape);
}

template <class T>
std::vector<T> vals(const Tensor& t) { return t.to_vector<T>(); }

// Message of the exception E thrown by f (fails the test when none is thrown).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// out[i...] = in[perm-mapped index], element by element.
std::vector<double> naive_transpose(const Tensor& x, const std::vector<int>& perm) {
  Shape s = x.shape(), strides = contiguous_strides(s), out_shape(s.size());
  for (size_t i = 0; i < s.size(); ++i) out_shape[i] = s[static_cast<size_t>(perm[i])];
  std::vector<double> out(static_cast<size_t>(x.numel()));
  Tensor c = x.contiguous();
  for (int64_t o = 0; o < x.numel(); ++o) {
    int64_t rem = o, src = 0;
    for (size_t a = s.size(); a-- > 0;) {
      src += (rem % out_shape[a]) * strides[static_cast<size_t>(perm[a])];
      rem /= out_shape[a];
    }
    out[static_cast<size_t>(o)] = element_as_double(c, src);
  }
  return out;
}

}  // namespace

TEST(Reshape, ValuesViewAndInference) {
  Tensor x = iota({2, 3});
  Tensor y = ops::reshape(x, {3, -1});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(y.raw_data(), x.raw_data());  // a view, no copy
  EXPECT_EQ(ops::reshape(x, {-1}).shape(), (Shape{6}));
  EXPECT_EQ(ops::reshape(Tensor::scalar(4, DType::int64), {1, 1}).to_vector<int64_t>(), (std::vector<int64_t>{4}));
  Tensor b = Tensor::from_vector<bool>({true, false, true, true}, {4});
  EXPECT_EQ(ops::reshape(b, {2, 2}).to_vector<bool>(), (std::vector<bool>{true, false, true, true}));
  // A strided input is copied first, so the reshape sees row-major order of the view.
  EXPECT_EQ(vals<float>(ops::reshape(x.permuted(), {6})), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(infer_op("reshape", {{{-1, 28, 28}, DType::float32}}, {{"shape", Shape{-1, 784}}})[0].shape, (Shape{-1, 784}));
}

TEST(Reshape, ErrorsNameBothShapes) {
  Tensor x = iota({2, 3});
  std::string msg = error_of<ShapeError>([&] { ops::reshape(x, {4, 2}); });
  EXPECT_TRUE(contains(msg, "reshape")) << msg;
  EXPECT_TRUE(contains(msg, "(2, 3)")) << msg;
  EXPECT_TRUE(contains(msg, "(4, 2)")) << msg;
  msg = error_of<ShapeError>([&] { ops::reshape(x, {4, -1}); });
  EXPECT_TRUE(contains(msg, "(2, 3)") && contains(msg, "(4, -1)")) << msg;
  EXPECT_THROW(ops::reshape(x, {-1, -1}), ShapeError);
}

TEST(Transpose, Values) {
  Tensor x = iota({2, 3});
  Tensor t = ops::transpose(x);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(t), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // (2, 2, 3) with perm (2, 0, 1): out[k][i][j] = x[i][j][k] = 6i + 3j + k.
  Tensor y = ops::transpose(iota({2, 2, 3}, DType::int32), {2, 0, 1});
  EXPECT_EQ(y.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(vals<int32_t>(y), (std::vector<int32_t>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  EXPECT_EQ(vals<int32_t>(ops::transpose(iota({2, 2, 3}, DType::int32), {-1, 0, 1})), vals<int32_t>(y));
  Tensor b = Tensor::from_vector<bool>({true, false, false, false}, {2, 2});
  EXPECT_EQ(ops::transpose(b).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(vals<double>(ops::transpose(iota({1, 4, 1}, DType::float64), {2, 1, 0})), (std::vector<double>{0, 1, 2, 3}));
}

TEST(Transpose, MatchesNaiveReference) {
  struct Case { Shape shape; std::vector<int> perm; };
  std::vector<Case> cases = {{{70, 45}, {1, 0}},          {{3, 33, 40}, {0, 2, 1}},    {{2, 5, 6, 3}, {0, 3, 1, 2}},
                             {{2, 5, 6, 3}, {0, 2, 3, 1}}, {{4, 3, 5, 2}, {3, 1, 0, 2}}, {{3, 1, 4, 5}, {2, 1, 0, 3}},
                             {{2, 67, 3, 9}, {0, 3, 2, 1}}, {{2, 3, 4}, {1, 0, 2}},     {{600, 500}, {1, 0}}};  // > 1 MB: threads
  for (const auto& c : cases) {
    for (DType dt : {DType::float32, DType::float64, DType::int64}) {
      Tensor x = iota(c.shape, dt);
      Tensor y = ops::transpose(x, c.perm);
      std::vector<double> got(static_cast<size_t>(y.numel()));
      for (int64_t i = 0; i < y.numel(); ++i) got[static_cast<size_t>(i)] = element_as_double(y, i);
      EXPECT_EQ(got, naive_transpose(x, c.perm)) << shape_str(c.shape) << " " << dtype_name(dt);
    }
  }
}

TEST(Transpose, Errors) {
  Tensor x = iota({2, 3});
  EXPECT_THROW(ops::transpose(x, {0, 2}), IndexError);
  EXPECT_THROW(ops::transpose(x, {0, 0}), ValueError);
  EXPECT_THROW(ops::transpose(x, {0}), ValueError);
}

TEST(Concatenate, Values) {
  Tensor a = iota({2, 2});
  Tensor b = Tensor::from_vector<float>({10, 11}, {1, 2});
  Tensor c = ops::concatenate({a, b}, 0);
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(c), (std::vector<float>{0, 1, 2, 3, 10, 11}));
  Tensor d = Tensor::from_vector<float>({10, 11}, {2, 1});
  Tensor e = ops::concatenate({a, d, a}, -1);
  EXPECT_EQ(e.shape(), (Shape{2, 5}));
  EXPECT_EQ(vals<float>(e), (std::vector<float>{0, 1, 10, 0, 1, 2, 3, 11, 2, 3}));
  Tensor i64 = ops::concatenate({Tensor::from_vector<int64_t>({1, 2}), Tensor::from_vector<int64_t>({3})}, 0);
  EXPECT_EQ(vals<int64_t>(i64), (std::vector<int64_t>{1, 2, 3}));
  Tensor bo = ops::concatenate({Tensor::from_vector<bool>({true}), Tensor::from_vector<bool>({false, true})});
  EXPECT_EQ(bo.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  // Middle axis of a 3-D tensor, one empty input.
  Tensor m = ops::concatenate({iota({2, 1, 2}), Tensor::zeros({2, 0, 2}), iota({2, 1, 2})}, 1);
  EXPECT_EQ(vals<float>(m), (std::vector<float>{0, 1, 0, 1, 2, 3, 2, 3}));
}

TEST(Concatenate, Errors) {
  Tensor a = iota({2, 3});
  std::string msg = error_of<ShapeError>([&] { ops::concatenate({a, a, iota({2, 4})}, 0); });
  EXPECT_TRUE(contains(msg, "concatenate") && contains(msg, "input 2") && contains(msg, "(2, 3)") && contains(msg, "(2, 4)")) << msg;
  EXPECT_THROW(ops::concatenate({a, iota({6})}, 0), ShapeError);
  EXPECT_THROW(ops::concatenate({a, iota({2, 3}, DType::float64)}, 0), TypeError);
  EXPECT_THROW(ops::concatenate({a, a}, 2), IndexError);
  EXPECT_THROW(ops::concatenate({}, 0), ValueError);
}

TEST(Slice, Values) {
  Tensor x = iota({3, 4});
  Tensor y = ops::slice(x, {1, 1}, {2, 2});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{5, 6, 9, 10}));
  EXPECT_EQ(vals<float>(ops::slice(x, {1, 2}, {-1, -1})), (std::vector<float>{6, 7, 10, 11}));
  EXPECT_EQ(vals<float>(ops::slice(x, {2, 0}, {1, -1})), (std::vector<float>{8, 9, 10, 11}));
  Tensor z = ops::slice(iota({2, 3, 2}, DType::int32), {0, 1, 1}, {2, 2, 1});
  EXPECT_EQ(vals<int32_t>(z), (std::vector<int32_t>{3, 5, 9, 11}));
  EXPECT_EQ(ops::slice(x, {3, 0}, {0, 4}).shape(), (Shape{0, 4}));
  Tensor b = Tensor::from_vector<bool>({true, false, true}, {3});
  EXPECT_EQ(ops::slice(b, {1}, {2}).to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST(Slice, Errors) {
  Tensor x = iota({3, 4});
  EXPECT_THROW(ops::slice(x, {0, 3}, {1, 2}), IndexError);
  EXPECT_THROW(ops::slice(x, {4, 0}, {-1, -1}), IndexError);
  EXPECT_THROW(ops::slice(x, {0}, {1}), ValueError);
}

TEST(Take, Values) {
  Tensor x = iota({3, 2});
  Tensor y = ops::take(x, Tensor::from_vector<int32_t>({2, 0, 2}), 0);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{4, 5, 0, 1, 4, 5}));
  Tensor z = ops::take(x, Tensor::from_vector<int64_t>({1, 1, 0}), -1);
  EXPECT_EQ(z.shape(), (Shape{3, 3}));
  EXPECT_EQ(vals<float>(z), (std::vector<float>{1, 1, 0, 3, 3, 2, 5, 5, 4}));
  // 2-D indices (an embedding lookup), negative index wraps as in NumPy.
  Tensor e = ops::take(iota({4, 2}, DType::int64), Tensor::from_vector<int64_t>({3, -4, 1, 1}, {2, 2}), 0);
  EXPECT_EQ(e.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals<int64_t>(e), (std::vector<int64_t>{6, 7, 0, 1, 2, 3, 2, 3}));
  Tensor b = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_EQ(ops::take(b, Tensor::from_vector<int32_t>({1, 0, 0})).to_vector<bool>(), (std::vector<bool>{false, true, true}));
}

TEST(Take, Errors) {
  Tensor x = iota({3, 2});
  std::string msg = error_of<IndexError>([&] { ops::take(x, Tensor::from_vector<int32_t>({0, 5}), 0); });
  EXPECT_TRUE(contains(msg, "take") && contains(msg, "index 5") && contains(msg, "[-3, 3)")) << msg;
  EXPECT_THROW(ops::take(x, Tensor::from_vector<int32_t>({-4}), 0), IndexError);
  EXPECT_THROW(ops::take(x, Tensor::from_vector<float>({0}), 0), TypeError);
  EXPECT_THROW(ops::take(x, Tensor::from_vector<int32_t>({0}), 2), IndexError);
}

TEST(OneHot, ValuesAndErrors) {
  Tensor y = ops::one_hot(Tensor::from_vector<int32_t>({2, 0, 1}), 3);
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(y.dtype(), DType::float32);
  EXPECT_EQ(vals<float>(y), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  Tensor z = ops::one_hot(Tensor::from_vector<int64_t>({1, 0}, {2, 1}), 2, DType::int32);
  EXPECT_EQ(z.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(vals<int32_t>(z), (std::vector<int32_t>{0, 1, 1, 0}));
  std::string msg = error_of<IndexError>([] { ops::one_hot(Tensor::from_vector<int32_t>({3, 10, 2}), 10); });
  EXPECT_TRUE(contains(msg, "one_hot") && contains(msg, "label 10") && contains(msg, "position (1,)")) << msg;
  EXPECT_THROW(ops::one_hot(Tensor::from_vector<int64_t>({-1}), 10), IndexError);
  EXPECT_THROW(ops::one_hot(Tensor::from_vector<float>({1}), 10), TypeError);
}

TEST(ExpandSqueeze, ValuesAndErrors) {
  Tensor x = iota({2, 3});
  EXPECT_EQ(ops::expand_dims(x, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(ops::expand_dims(x, 1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(ops::expand_dims(x, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(vals<float>(ops::expand_dims(x, -1)), vals<float>(x));
  Tensor y = iota({2, 1, 3, 1}, DType::int64);
  EXPECT_EQ(ops::squeeze(y, 1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(ops::squeeze(y, -1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(ops::squeeze(y, -1).raw_data(), y.raw_data());
  std::string msg = error_of<ValueError>([&] { ops::squeeze(y, 2); });
  EXPECT_TRUE(contains(msg, "squeeze") && contains(msg, "extent 3")) << msg;
  EXPECT_THROW(ops::squeeze(y, 4), IndexError);
  EXPECT_THROW(ops::expand_dims(x, 3), IndexError);
  EXPECT_THROW(ops::expand_dims(x, -4), IndexError);
}

TEST(ShapeOpsGradients, Float64) {
  auto r = [](const Shape& s, uint64_t seed) { return random::normal(s, 0, 1, seed, DType::float64); };
  check_gradients("reshape", [](const TensorList& in) { return ops::reshape(in[0], {3, -1}); }, {r({2, 3, 2}, 1)});
  check_gradients("transpose", [](const TensorList& in) { return ops::transpose(in[0], {2, 0, 1}); }, {r({2, 3, 4}, 2)});
  check_gradients("transpose 2-D", [](const TensorList& in) { return ops::transpose(in[0]); }, {r({3, 5}, 3)});
  check_gradients("concatenate", [](const TensorList& in) { return ops::concatenate({in[0], in[1], in[2]}, 1); },
                  {r({2, 1, 3}, 4), r({2, 2, 3}, 5), r({2, 3, 3}, 6)});
  check_gradients("concatenate axis -1", [](const TensorList& in) { return ops::concatenate({in[0], in[1]}, -1); },
                  {r({2, 2}, 7), r({2, 3}, 8)});
  check_gradients("slice", [](const TensorList& in) { return ops::slice(in[0], {1, 0, 2}, {2, -1, 2}); }, {r({3, 2, 5}, 9)});
  Tensor idx = Tensor::from_vector<int64_t>({2, 0, 2, 2, 1});
  check_gradients("take axis 0", [&](const TensorList& in) { return ops::take(in[0], idx, 0); }, {r({3, 4}, 10)});
  Tensor idx2 = Tensor::from_vector<int32_t>({1, 1, 0, 1}, {2, 2});
  check_gradients("take axis 1", [&](const TensorList& in) { return ops::take(in[0], idx2, 1); }, {r({2, 3, 2}, 11)});
  check_gradients("expand_dims", [](const TensorList& in) { return ops::expand_dims(in[0], -2); }, {r({2, 3}, 12)});
  check_gradients("squeeze", [](const TensorList& in) { return ops::squeeze(in[0], 1); }, {r({2, 1, 3}, 13)});
}

TEST(ShapeOpsGradients, ScatterAddAccumulates) {
  // d sum(take(x, [1, 1, 1, 0])) / dx = counts of each index.
  Tensor x = iota({3}, DType::float64).clone().set_requires_grad(true);
  TensorList g;
  {
    GradientTape tape;
    Tensor y = ops::take(x, Tensor::from_vector<int32_t>({1, 1, 1, 0}));
    g = tape.gradient(y, {x});
  }
  EXPECT_EQ(vals<double>(g[0]), (std::vector<double>{1, 3, 0}));
}

TEST(ShapeOpsGradients, SecondOrderHelpers) {
  // The gradient helpers are differentiable too (slice_grad <-> slice, take_grad <-> take).
  auto r = [](const Shape& s, uint64_t seed) { return random::normal(s, 0, 1, seed, DType::float64); };
  check_gradients("slice_grad", [](const TensorList& in) {
    return run_op("slice_grad", {in[0]}, Attrs{{"shape", Shape{3, 4}}, {"begin", Shape{1, 1}}})[0];
  }, {r({2, 2}, 14)});
  Tensor idx = Tensor::from_vector<int64_t>({0, 0, 2});
  check_gradients("take_grad", [&](const TensorList& in) {
    return run_op("take_grad", {in[0], idx}, Attrs{{"axis", int64_t{0}}, {"shape", Shape{3, 2}}})[0];
  }, {r({3, 2}, 15)});
}
