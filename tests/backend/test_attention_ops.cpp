// masked_softmax and dot_product_attention (backend/ops_attention.h): values against a plain
// double-precision reference of Keras's formulas, every fill mode on fully and partly masked
// rows, float64 central-difference gradient checks, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backend/autodiff.h"
#include "backend/ops_attention.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;

namespace {

// Keras's masked softmax written out in double: where(m, x, fill) -> softmax -> where(m, y, 0).
std::vector<double> reference(const std::vector<double>& x, const std::vector<bool>& keep, int64_t n,
                              ops::MaskedSoftmaxOptions o) {
  std::vector<double> y(x.size());
  for (size_t base = 0; base < x.size(); base += static_cast<size_t>(n)) {
    std::vector<double> z(static_cast<size_t>(n));
    double mx = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      size_t i = base + static_cast<size_t>(k);
      z[static_cast<size_t>(k)] = keep[i] ? x[i] : (o.fill == ops::MaskFill::replace ? -1e9 : x[i] - 1e9);
      mx = std::max(mx, z[static_cast<size_t>(k)]);
    }
    for (auto& v : z) sum += std::exp(v - mx);
    for (int64_t k = 0; k < n; ++k) {
      size_t i = base + static_cast<size_t>(k);
      y[i] = std::exp(z[static_cast<size_t>(k)] - mx) / sum;
      if (o.zero_masked && !keep[i]) y[i] = 0;
    }
  }
  return y;
}

// (2, 3, 5) scores; row (0, 1) fully masked, row (1, 2) fully kept, the rest partly.
Tensor test_mask() {
  std::vector<double> m = {1, 0, 1, 1, 0,  0, 0, 0, 0, 0,  1, 1, 1, 1, 0,
                           0, 1, 0, 0, 0,  1, 0, 0, 1, 1,  1, 1, 1, 1, 1};
  return ops::greater(Tensor::from_vector(m, {2, 3, 5}), Tensor::scalar(0.5, DType::float64));
}

std::vector<bool> as_bools(const Tensor& m) {
  std::vector<double> d = ops::cast(m, DType::float64).to_vector<double>();
  std::vector<bool> out;
  for (double v : d) out.push_back(v > 0.5);
  return out;
}

const std::vector<ops::MaskedSoftmaxOptions> kModes = {
    {ops::MaskFill::replace, false}, {ops::MaskFill::replace, true},
    {ops::MaskFill::subtract, false}, {ops::MaskFill::subtract, true}};

std::string label(ops::MaskedSoftmaxOptions o) {
  return std::string(o.fill == ops::MaskFill::replace ? "replace" : "subtract") + (o.zero_masked ? "+zero" : "");
}

}  // namespace

TEST(MaskedSoftmax, MatchesKerasFormulaInBothPrecisions) {
  Tensor mask = test_mask();
  for (DType dtype : {DType::float32, DType::float64}) {
    Tensor x = random::normal({2, 3, 5}, 0.0, 3.0, uint64_t{5}, dtype);
    std::vector<double> xd = ops::cast(x, DType::float64).to_vector<double>();
    for (auto mode : kModes) {
      SCOPED_TRACE(label(mode) + " " + dtype_name(dtype));
      std::vector<double> want = reference(xd, as_bools(mask), 5, mode);
      if (mode.fill == ops::MaskFill::subtract && dtype == DType::float32) {
        // float32 rounds x - 1e9 to a multiple of 64: Keras's fully masked row is then uniform.
        for (int k = 0; k < 5; ++k) want[5 + static_cast<size_t>(k)] = mode.zero_masked ? 0.0 : 0.2;
      }
      std::vector<double> got = ops::cast(ops::masked_softmax(x, mask, mode), DType::float64).to_vector<double>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], dtype == DType::float64 ? 1e-12 : 1e-6) << i;
    }
  }
}

TEST(MaskedSoftmax, FullyMaskedRowIsUniformOrZero) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 4});
  Tensor none = Tensor::zeros({1, 4}, DType::boolean);
  EXPECT_EQ(ops::masked_softmax(x, none, {ops::MaskFill::replace, false}).to_vector<float>(),
            (std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}));
  EXPECT_EQ(ops::masked_softmax(x, none, {ops::MaskFill::replace, true}).to_vector<float>(),
            (std::vector<float>{0, 0, 0, 0}));
}

TEST(MaskedSoftmax, BroadcastsTheMaskAndUndefinedIsPlainSoftmax) {
  Tensor x = random::normal({2, 2, 3, 4}, 0.0, 1.0, uint64_t{9});
  Tensor row = ops::greater(Tensor::from_vector(std::vector<float>{1, 0, 1, 1}, {4}), Tensor::scalar(0.5));
  Tensor full = ops::broadcast_to(row, x.shape());
  EXPECT_EQ(ops::masked_softmax(x, row).to_vector<float>(), ops::masked_softmax(x, full).to_vector<float>());
  EXPECT_EQ(ops::masked_softmax(x, Tensor()).to_vector<float>(), ops::softmax(x).to_vector<float>());
}

TEST(MaskedSoftmax, GradientsMatchCentralDifferencesInFloat64) {
  Tensor x = random::normal({2, 3, 5}, 0.0, 1.0, uint64_t{11}, DType::float64);
  for (auto mode : kModes) {
    // x - 1e9 keeps only ~1e-7 of x in float64, too coarse for central differences: the
    // subtract fill is checked here on rows with a kept entry, and below on a fully masked one.
    Tensor mask = test_mask();
    if (mode.fill == ops::MaskFill::subtract)
      mask = ops::greater(ops::add(ops::cast(test_mask(), DType::float64),
                                   Tensor::from_vector(std::vector<double>{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                                                       {1, 3, 5})),
                          Tensor::scalar(0.5, DType::float64));
    keras::testing::check_gradients("masked_softmax " + label(mode),
                                    [&](const TensorList& in) { return ops::masked_softmax(in[0], mask, mode); }, {x});
  }
}

TEST(MaskedSoftmax, SubtractFillOfAFullyMaskedRowDifferentiatesLikeSoftmax) {
  Tensor x = random::normal({1, 5}, 0.0, 1.0, uint64_t{13}, DType::float64);
  Tensor none = Tensor::zeros({1, 5}, DType::boolean);
  Tensor g = random::normal({1, 5}, 0.0, 1.0, uint64_t{14}, DType::float64);
  auto grad_of = [&](const std::function<Tensor(const Tensor&)>& f) {
    Tensor xi = x.clone();
    xi.set_requires_grad(true);
    GradientTape tape;
    Tensor loss = ops::sum(ops::multiply(f(xi), g));
    return tape.gradient(loss, {xi})[0].to_vector<double>();
  };
  std::vector<double> masked = grad_of([&](const Tensor& t) { return ops::masked_softmax(t, none, {ops::MaskFill::subtract, false}); });
  std::vector<double> plain = grad_of([](const Tensor& t) { return ops::softmax(t); });
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(masked[i], plain[i], 1e-6) << i;
  std::vector<double> replaced = grad_of([&](const Tensor& t) { return ops::masked_softmax(t, none, {ops::MaskFill::replace, false}); });
  for (double v : replaced) EXPECT_EQ(v, 0.0);  // replaced scores do not depend on x
}

TEST(MaskedSoftmax, GradientsFloat32) {
  Tensor mask = test_mask();
  Tensor x = random::normal({2, 3, 5}, 0.0, 1.0, uint64_t{12});
  keras::testing::check_gradients("masked_softmax float32",
                                  [&](const TensorList& in) { return ops::masked_softmax(in[0], mask, {ops::MaskFill::replace, true}); },
                                  {x});
}

TEST(MaskedSoftmax, Errors) {
  Tensor x = random::normal({2, 3}, 0.0, 1.0, uint64_t{1});
  EXPECT_THROW(ops::masked_softmax(x, Tensor::ones({2, 3})), TypeError);  // float mask
  EXPECT_THROW(ops::masked_softmax(x, Tensor::ones({2, 4}, DType::boolean)), ShapeError);
  EXPECT_THROW(ops::masked_softmax(x, Tensor::ones({1, 2, 3}, DType::boolean)), ShapeError);
  EXPECT_THROW(ops::masked_softmax(Tensor::ones({2, 3}, DType::int32), Tensor::ones({2, 3}, DType::boolean)), TypeError);
}

TEST(DotProductAttention, MatchesExplicitCompositionAndReturnsProbabilities) {
  Tensor q = random::normal({2, 3, 4, 5}, 0.0, 1.0, uint64_t{21});
  Tensor k = random::normal({2, 3, 6, 5}, 0.0, 1.0, uint64_t{22});
  Tensor v = random::normal({2, 3, 6, 2}, 0.0, 1.0, uint64_t{23});
  Tensor mask = ops::causal_mask(4, 6);
  ops::DotProductAttentionOptions o{.scale = 0.5, .mask = mask};
  auto r = ops::dot_product_attention(q, k, v, o);
  Tensor probs = ops::masked_softmax(ops::matmul(ops::multiply(q, 0.5), k, false, true), mask);
  Tensor want = ops::matmul(probs, v);
  EXPECT_EQ(shape_str(r.output.shape()), "(2, 3, 4, 2)");
  EXPECT_EQ(shape_str(r.scores.shape()), "(2, 3, 4, 6)");
  EXPECT_EQ(r.output.to_vector<float>(), want.to_vector<float>());
  // Causal: query 0 sees only key 0.
  std::vector<float> p = r.scores.to_vector<float>();
  EXPECT_FLOAT_EQ(p[0], 1.0f);
  for (int j = 1; j < 6; ++j) EXPECT_EQ(p[static_cast<size_t>(j)], 0.0f);
}

TEST(DotProductAttention, GradientsMatchCentralDifferencesInFloat64) {
  Tensor q = random::normal({2, 3, 4}, 0.0, 1.0, uint64_t{31}, DType::float64);
  Tensor k = random::normal({2, 5, 4}, 0.0, 1.0, uint64_t{32}, DType::float64);
  Tensor v = random::normal({2, 5, 3}, 0.0, 1.0, uint64_t{33}, DType::float64);
  Tensor mask = ops::greater(random::uniform({2, 1, 5}, 0.0, 1.0, uint64_t{34}), Tensor::scalar(0.3));
  for (auto mode : kModes)
    keras::testing::check_gradients("dot_product_attention " + label(mode), [&](const TensorList& in) {
      return ops::dot_product_attention(in[0], in[1], in[2], {.scale = 0.5, .mask = mask, .softmax = mode}).output;
    }, {q, k, v});
}

TEST(DotProductAttention, ShapeErrors) {
  Tensor q = Tensor::ones({2, 3, 4}), k = Tensor::ones({2, 5, 4}), v = Tensor::ones({2, 5, 3});
  EXPECT_THROW(ops::dot_product_attention(q, Tensor::ones({2, 5, 3}), v), ShapeError);
  EXPECT_THROW(ops::dot_product_attention(q, k, Tensor::ones({2, 4, 3})), ShapeError);
  EXPECT_THROW(ops::dot_product_attention(q, k, v, {.mask = Tensor::ones({2, 3, 4}, DType::boolean)}), ShapeError);
}

TEST(AttentionMasks, CausalMaskAndMaskAnd) {
  EXPECT_EQ(ops::cast(ops::causal_mask(3, 3), DType::float32).to_vector<float>(),
            (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  Tensor a = ops::greater(Tensor::from_vector(std::vector<float>{1, 0, 1}, {1, 3}), Tensor::scalar(0.5));
  Tensor b = ops::greater(Tensor::from_vector(std::vector<float>{1, 1}, {2, 1}), Tensor::scalar(0.5));
  Tensor both = ops::mask_and(a, b);
  EXPECT_EQ(shape_str(both.shape()), "(2, 3)");
  EXPECT_EQ(ops::cast(both, DType::float32).to_vector<float>(), (std::vector<float>{1, 0, 1, 1, 0, 1}));
  EXPECT_EQ(ops::mask_and(Tensor(), a).numel(), 3);
}
