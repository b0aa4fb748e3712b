// CUDA kernels of batch normalization (batch_moments, batch_norm_train, batch_norm_train_grad,
// batch_norm_inference) and the softmax family (softmax, log_softmax, masked_softmax and their
// gradients) against the CPU kernels, through the public functions the layers call. Each case
// runs on CPU tensors and on the same data on cuda:0; outputs and the gradients of a weighted sum
// of the first output (GradientTape) must agree within 1e-5 relative, float32 and float64.
// Every test skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "backend/autodiff.h"
#include "backend/cuda.h"
#include "backend/ops.h"
#include "backend/ops_attention.h"
#include "backend/ops_nn.h"
#include "backend/random.h"
#include "support/cuda_test.h"

using namespace keras;


namespace {

// max |a - b| / max(1, max |b|), NaN only where the reference has NaN (as test_cuda.cpp).
double rel_err(const Tensor& got_any, const Tensor& want_any) {
  Tensor got = got_any.to(Device::cpu()), want = want_any.to(Device::cpu());
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.dtype(), want.dtype());
  if (got.shape() != want.shape()) return 1e300;
  std::vector<double> g = ops::cast(got, DType::float64).to_vector<double>();
  std::vector<double> w = ops::cast(want, DType::float64).to_vector<double>();
  double diff = 0, scale = 1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) != std::isnan(g[i])) return 1e300;
    if (std::isnan(w[i])) continue;
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / scale;
}

// N(mean, stddev^2) on the CPU; positive = |x| + 0.1 (variances).
Tensor data(const Shape& shape, DType dtype, uint64_t seed, double mean = 0, double stddev = 1, bool positive = false) {
  Tensor t = random::normal(shape, mean, stddev, seed, dtype);
  return positive ? ops::add(ops::abs(t), 0.1) : t;
}

// A bool mask of `shape` (last axis n) with about `keep` of the entries kept; row `full_row`
// (of the flattened leading axes) is fully masked, row 0 fully kept.
Tensor make_mask(const Shape& shape, double keep, int64_t full_row, uint64_t seed) {
  const int64_t n = shape.back(), rows = n ? shape_numel(shape) / n : 0;
  Tensor u = random::uniform(shape, 0.0, 1.0, seed, DType::float64);
  std::vector<double> v = u.to_vector<double>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < n; ++k) {
      double& e = v[static_cast<size_t>(r * n + k)];
      e = r == full_row ? 0.0 : (r == 0 ? 1.0 : (e < keep ? 1.0 : 0.0));
    }
  return ops::greater(Tensor::from_vector(v, shape), Tensor::scalar(0.5, DType::float64));
}

struct Case {
  std::string name;
  std::function<TensorList(DType)> inputs;           // CPU inputs
  std::function<TensorList(const TensorList&)> fn;   // outputs; the first is differentiated
  std::vector<size_t> grad_inputs;                   // inputs to differentiate (none: forward only)
  DType dtype = DType::float32;
};

TensorList run_case(const Case& c, Device d) {
  GradientTape tape;  // ops record only under a tape
  TensorList in = c.inputs(c.dtype);
  for (Tensor& t : in) t = t.to(d);
  TensorList sources;
  for (size_t i : c.grad_inputs) {
    in[i].set_requires_grad(true);
    sources.push_back(in[i]);
  }
  TensorList out = c.fn(in);
  if (!sources.empty()) {
    // A weighted sum: the plain sum of a softmax (or of batch-normalized y) has a zero gradient.
    Tensor w = data(out[0].shape(), c.dtype, 99).to(d);
    TensorList g = tape.gradient(ops::sum(ops::multiply(out[0], w)), sources);
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

class CudaNormSoftmax : public ::testing::TestWithParam<Case> {};

TEST_P(CudaNormSoftmax, MatchesCpu) {
  REQUIRE_CUDA();
  const Case& c = GetParam();
  TensorList want = run_case(c, Device::cpu()), got = run_case(c, Device::cuda(0));
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(want[i].defined() && got[i].defined()) << c.name << " result " << i;
    EXPECT_EQ(got[i].device(), Device::cuda(0)) << c.name << " result " << i;
    EXPECT_LE(rel_err(got[i], want[i]), 1e-5) << c.name << " result " << i;
  }
}

std::string dtype_tag(DType t) { return t == DType::float32 ? "f32" : "f64"; }
std::string shape_tag(const Shape& s) {
  std::string out;
  for (int64_t e : s) out += (out.empty() ? "" : "x") + std::to_string(e);
  return out.empty() ? "scalar" : out;
}

using L = const TensorList&;

void add_batch_norm_cases(std::vector<Case>& cases, DType dt) {
  std::vector<Shape> shapes;
  for (int64_t C : {1, 3, 64, 67})
    for (int64_t M : {1, 7, 1000, 100000}) shapes.push_back({M, C});
  shapes.push_back({2, 5, 7, 67});
  shapes.push_back({3, 1, 1, 3});
  for (const Shape& s : shapes) {
    const int64_t C = s.back();
    cases.push_back({"batch_norm_training_" + shape_tag(s) + "_" + dtype_tag(dt),
                     [=](DType t) {
                       return TensorList{data(s, t, 1, 3.0, 2.0), data({C}, t, 2), data({C}, t, 3)};
                     },
                     [](L in) {
                       ops::BatchNormOutputs o = ops::batch_norm_training(in[0], in[1], in[2], 1e-3);
                       return TensorList{o.y, o.mean, o.variance};
                     },
                     {0, 1, 2}, dt});
    cases.push_back({"batch_norm_inference_" + shape_tag(s) + "_" + dtype_tag(dt),
                     [=](DType t) {
                       return TensorList{data(s, t, 4), data({C}, t, 5), data({C}, t, 6, 1.0, 0.5, true),
                                         data({C}, t, 7), data({C}, t, 8)};
                     },
                     [](L in) { return TensorList{ops::batch_norm_inference(in[0], in[1], in[2], in[3], in[4], 1e-3)}; },
                     {0, 1, 2, 3, 4}, dt});
  }
  // Undefined gamma/beta, a mean far from 0 (the float32 moments shift by the first row). Not
  // larger: y = x * a + (beta - mean * a) cancels, and the CPU's float32 y is then only as
  // accurate as an ulp of x * a.
  cases.push_back({"batch_norm_training_no_affine_offset_" + dtype_tag(dt),
                   [](DType t) { return TensorList{data({5000, 19}, t, 9, 10.0, 0.5)}; },
                   [](L in) {
                     ops::BatchNormOutputs o = ops::batch_norm_training(in[0], Tensor(), Tensor(), 1e-5);
                     return TensorList{o.y, o.mean, o.variance};
                   },
                   {0}, dt});
  // Empty batch: inference writes nothing; the moments of no rows are NaN, as the CPU.
  cases.push_back({"batch_norm_inference_empty_" + dtype_tag(dt),
                   [](DType t) {
                     return TensorList{data({0, 3}, t, 1), data({3}, t, 2), data({3}, t, 3, 1.0, 0.5, true),
                                       data({3}, t, 4), data({3}, t, 5)};
                   },
                   [](L in) { return TensorList{ops::batch_norm_inference(in[0], in[1], in[2], in[3], in[4], 1e-3)}; },
                   {}, dt});
  cases.push_back({"batch_moments_empty_" + dtype_tag(dt), [](DType t) { return TensorList{data({0, 3}, t, 1)}; },
                   [](L in) {
                     static const OpDef& def = OpRegistry::instance().find("batch_moments");
                     return run_op(def, {in[0]});
                   },
                   {}, dt});
}

void add_softmax_cases(std::vector<Case>& cases, DType dt) {
  struct S {
    Shape shape;
    int axis;
    double scale;
  };
  std::vector<S> specs;
  for (int64_t n : {1, 3, 64, 67, 1000})
    for (int64_t rows : {1, 100}) specs.push_back({{rows, n}, -1, 1.0});
  specs.push_back({{100000, 3}, -1, 1.0});
  specs.push_back({{2, 70000}, -1, 1.0});
  specs.push_back({{4, 67, 5}, 1, 1.0});  // a middle axis: one thread per column
  specs.push_back({{67, 33}, 0, 1.0});
  specs.push_back({{3, 2, 65}, 2, 1.0});
  specs.push_back({{100, 67}, -1, 1e4});  // large logits stay finite
  specs.push_back({{67, 9}, 0, 1e4});
  specs.push_back({{0, 5}, -1, 1.0});
  specs.push_back({{5, 0}, -1, 1.0});
  for (const S& s : specs)
    for (bool log : {false, true}) {
      std::string name = std::string(log ? "log_softmax_" : "softmax_") + shape_tag(s.shape) + "_axis" +
                         (s.axis < 0 ? "m" + std::to_string(-s.axis) : std::to_string(s.axis)) +
                         (s.scale > 1 ? "_large" : "") + "_" + dtype_tag(dt);
      cases.push_back({name, [=](DType t) { return TensorList{data(s.shape, t, 11, 0.0, s.scale)}; },
                       [=](L in) { return TensorList{log ? ops::log_softmax(in[0], s.axis) : ops::softmax(in[0], s.axis)}; },
                       {0}, dt});
    }
}

void add_masked_cases(std::vector<Case>& cases, DType dt) {
  struct S {
    Shape x, mask;
    double scale;
  };
  // Row 1 of each (flattened) is fully masked; the (64, 1, 67) mask broadcasts over axis 1.
  std::vector<S> specs = {{{2, 3, 5}, {2, 3, 5}, 1.0},     {{64, 67}, {64, 67}, 1.0},
                          {{8, 4, 33}, {8, 1, 33}, 1.0},   {{3, 1000}, {3, 1000}, 1.0},
                          {{16, 67}, {16, 67}, 1e4},       {{1, 1}, {1, 1}, 1.0}};
  const std::vector<std::pair<ops::MaskFill, bool>> modes = {
      {ops::MaskFill::replace, false}, {ops::MaskFill::replace, true},
      {ops::MaskFill::subtract, false}, {ops::MaskFill::subtract, true}};
  for (const S& s : specs)
    for (auto [fill, zero] : modes) {
      std::string name = "masked_softmax_" + shape_tag(s.x) + (s.scale > 1 ? "_large" : "") +
                         (fill == ops::MaskFill::replace ? "_replace" : "_subtract") + (zero ? "_zero" : "") + "_" +
                         dtype_tag(dt);
      cases.push_back({name,
                       [=](DType t) {
                         return TensorList{data(s.x, t, 21, 0.0, s.scale), make_mask(s.mask, 0.6, 1, 22)};
                       },
                       [=](L in) { return TensorList{ops::masked_softmax(in[0], in[1], {fill, zero})}; }, {0}, dt});
    }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (DType dt : {DType::float32, DType::float64}) {
    add_batch_norm_cases(cases, dt);
    add_softmax_cases(cases, dt);
    add_masked_cases(cases, dt);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaNormSoftmax, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The per-channel reductions have no atomics: two runs give the same bits.
TEST(CudaNormSoftmaxDeterminism, BatchNormIsBitwiseReproducible) {
  REQUIRE_CUDA();
  for (DType dt : {DType::float32, DType::float64}) {
    Tensor x = data({100000, 67}, dt, 31, 1.0, 3.0).to(Device::cuda(0)).set_requires_grad(true);
    Tensor w = data({100000, 67}, dt, 32).to(Device::cuda(0));
    auto once = [&] {
      GradientTape tape;
      ops::BatchNormOutputs o = ops::batch_norm_training(x, Tensor(), Tensor(), 1e-3);
      TensorList g = tape.gradient(ops::sum(ops::multiply(o.y, w)), {x});
      return TensorList{o.y, o.mean, o.variance, g[0]};
    };
    TensorList a = once(), b = once();
    for (size_t i = 0; i < a.size(); ++i) {
      std::vector<double> va = ops::cast(a[i], DType::float64).to(Device::cpu()).to_vector<double>();
      std::vector<double> vb = ops::cast(b[i], DType::float64).to(Device::cpu()).to_vector<double>();
      EXPECT_EQ(va, vb) << "result " << i << " " << dtype_name(dt);
    }
  }
}

}  // namespace
