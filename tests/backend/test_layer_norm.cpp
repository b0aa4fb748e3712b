// ops::layer_norm (the fused layer_norm op on the CPU): values against Keras's formula written
// out in double, on rows with a large mean; float64 central-difference gradients with and without
// gamma/beta; float32 gradients against float64 ones on a problem large enough to split over
// threads, twice bit for bit; errors.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/ops_nn.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;

namespace {

std::vector<double> as_doubles(const Tensor& t) { return ops::cast(t, DType::float64).to_vector<double>(); }

// (x - mean) / sqrt(var + eps) * gamma + beta per row, in double.
std::vector<double> reference(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  std::vector<double> v = as_doubles(x), g = as_doubles(gamma), b = as_doubles(beta), y(v.size());
  const size_t n = g.size();
  for (size_t r = 0; r < v.size(); r += n) {
    double mean = 0, var = 0;
    for (size_t k = 0; k < n; ++k) mean += v[r + k];
    mean /= static_cast<double>(n);
    for (size_t k = 0; k < n; ++k) var += (v[r + k] - mean) * (v[r + k] - mean);
    var /= static_cast<double>(n);
    for (size_t k = 0; k < n; ++k) y[r + k] = (v[r + k] - mean) / std::sqrt(var + eps) * g[k] + b[k];
  }
  return y;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

}  // namespace

TEST(LayerNormFused, MatchesKerasFormulaOnRowsWithALargeMean) {
  // 37 features: not a multiple of any vector width.
  Tensor x = ops::add(random::normal({6, 4, 37}, 0.0, 1.0, uint64_t{1}), 1000.0);
  Tensor gamma = random::normal({37}, 1.0, 0.5, uint64_t{2}), beta = random::normal({37}, 0.0, 1.0, uint64_t{3});
  Tensor y = ops::layer_norm(x, gamma, beta, 1e-5);
  EXPECT_EQ(shape_str(y.shape()), "(6, 4, 37)");
  // float32 inputs near 1000 carry ~6e-5 absolute rounding each; the normalised output ~1e-4.
  EXPECT_LT(max_abs_diff(as_doubles(y), reference(x, gamma, beta, 1e-5)), 5e-4);
  Tensor x64 = ops::cast(x, DType::float64);
  Tensor y64 = ops::layer_norm(x64, ops::cast(gamma, DType::float64), ops::cast(beta, DType::float64), 1e-5);
  EXPECT_LT(max_abs_diff(as_doubles(y64), reference(x64, gamma, beta, 1e-5)), 1e-12);
  // Undefined gamma and beta are 1 and 0.
  Tensor plain = ops::layer_norm(x64, Tensor(), Tensor(), 1e-5);
  EXPECT_LT(max_abs_diff(as_doubles(plain), reference(x64, Tensor::ones({37}), Tensor::zeros({37}), 1e-5)), 1e-12);
}

TEST(LayerNormFused, GradientsMatchCentralDifferencesInFloat64) {
  Tensor x = random::normal({3, 2, 5}, 0.0, 2.0, uint64_t{11}, DType::float64);
  Tensor gamma = random::normal({5}, 1.0, 0.5, uint64_t{12}, DType::float64);
  Tensor beta = random::normal({5}, 0.0, 1.0, uint64_t{13}, DType::float64);
  keras::testing::check_gradients("layer_norm", [](const TensorList& in) { return ops::layer_norm(in[0], in[1], in[2], 1e-3); },
                                  {x, gamma, beta});
  keras::testing::check_gradients("layer_norm without gamma, beta",
                                  [](const TensorList& in) { return ops::layer_norm(in[0], Tensor(), Tensor(), 1e-3); }, {x});
}

TEST(LayerNormFused, Float32GradientsMatchFloat64AcrossThreadsAndRepeat) {
  // 512 rows x 96: above the kernels' parallel threshold, so the rows and the column sums of
  // dgamma/dbeta are split over threads.
  Tensor x = random::normal({512, 96}, 0.5, 2.0, uint64_t{21}, DType::float64);
  Tensor gamma = random::normal({96}, 1.0, 0.5, uint64_t{22}, DType::float64);
  Tensor beta = random::normal({96}, 0.0, 1.0, uint64_t{23}, DType::float64);
  Tensor seed = random::normal({512, 96}, 0.0, 1.0, uint64_t{24}, DType::float64);
  auto grads = [&](DType dtype) {
    TensorList in{ops::cast(x, dtype), ops::cast(gamma, dtype), ops::cast(beta, dtype)};
    for (auto& t : in) t.set_requires_grad(true);
    GradientTape tape;
    Tensor y = ops::layer_norm(in[0], in[1], in[2], 1e-5);
    return compute_gradients(y, in, ops::cast(seed, dtype));
  };
  TensorList g32 = grads(DType::float32), again = grads(DType::float32), g64 = grads(DType::float64);
  // dgamma/dbeta sum 512 rows of O(1) terms: float32 rounding of the terms, summed in double.
  const double tol[] = {2e-5, 2e-4, 2e-4};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_LT(max_abs_diff(as_doubles(g32[i]), as_doubles(g64[i])), tol[i]) << "input " << i;
    EXPECT_EQ(g32[i].to_vector<float>(), again[i].to_vector<float>()) << "input " << i << " differs between runs";
  }
}

TEST(LayerNormFused, Errors) {
  EXPECT_THROW(ops::layer_norm(Tensor::scalar(1.0), Tensor(), Tensor(), 1e-3), ShapeError);
  EXPECT_THROW(ops::layer_norm(Tensor::zeros({2, 3}, DType::int32), Tensor(), Tensor(), 1e-3), TypeError);
  EXPECT_THROW(ops::layer_norm(Tensor::zeros({2, 3}), Tensor::ones({4}), Tensor(), 1e-3), ShapeError);
}
