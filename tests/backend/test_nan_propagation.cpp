// NaN passes through relu, relu6, leaky_relu, max pooling, clip, maximum and minimum on the CPU,
// as in TensorFlow, so that a NaN is never hidden from a user hunting it (issue 19); every other
// value comes out as before (oneDNN's, or the plain loops').
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/autodiff.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/ops_nn.h"

using namespace keras;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// NaN, +-inf, +-0 and ordinary values, repeated past the vector width and the threading threshold.
std::vector<float> special_values(size_t n) {
  const std::vector<float> base{kNaN, 1.5f, -2.f, kInf, -kInf, 0.f, -0.f, 7.f, 3.f, -kNaN, 6.f, -1e-30f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base[i % base.size()];
  return v;
}

template <class T>
Tensor tensor_of(const std::vector<float>& v) {
  Tensor t = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
  return std::is_same_v<T, double> ? t.astype(DType::float64) : t;
}

template <class T>
std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  for (T x : t.to_vector<T>()) out.push_back(static_cast<double>(x));
  return out;
}

// Element by element: NaN where `want` is NaN, the same value (and sign of zero) elsewhere.
void expect_same(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i << ": got " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " at " << i << " (sign of zero)";
    }
  }
}

template <class T>
void check_unary(const char* what, Tensor (*op)(const Tensor&), double (*want)(double), size_t n) {
  const auto in = special_values(n);
  std::vector<double> expected;
  for (float x : in) expected.push_back(want(static_cast<double>(x)));
  expect_same(values<T>(op(tensor_of<T>(in))), expected, what);
}

double relu_ref(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
double relu6_ref(double x) { return std::isnan(x) ? x : (x > 0 ? std::min(x, 6.0) : 0.0); }
Tensor relu_op(const Tensor& x) { return ops::relu(x); }
Tensor relu6_op(const Tensor& x) { return ops::relu6(x); }

}  // namespace

TEST(NaNPropagation, ReluKeepsNaNAndOtherwiseMatchesMax) {
  for (size_t n : {12u, 100u, 70001u}) {  // a tail, several vectors, the threaded path
    check_unary<float>("relu float32", relu_op, relu_ref, n);
    check_unary<double>("relu float64", relu_op, relu_ref, n);
    check_unary<float>("relu6 float32", relu6_op, relu6_ref, n);
  }
  // relu6 float64 runs the reference loop, whose -0 stays -0 (std::max); only NaN matters here.
  Tensor r6 = ops::relu6(tensor_of<double>(special_values(24)));
  EXPECT_TRUE(std::isnan(r6.to_vector<double>()[0]));
}

TEST(NaNPropagation, ReluOnRandomDataIsBitwiseMaxWithZero) {
  std::mt19937 gen(3);
  std::normal_distribution<float> d(0.f, 2.f);
  std::vector<float> v(50000);
  for (auto& x : v) x = d(gen);
  const auto y = ops::relu(Tensor::from_vector(v, {50000})).to_vector<float>();
  const auto y6 = ops::relu6(Tensor::from_vector(v, {50000})).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(y[i], std::max(v[i], 0.f));
    ASSERT_EQ(y6[i], std::min(std::max(v[i], 0.f), 6.f));
  }
}

TEST(NaNPropagation, ReluGradientAtNaNIsFinite) {
  // The NaN stays in the forward values; the gradient there is finite (oneDNN's float32 backward
  // passes the incoming gradient, as PyTorch's; TensorFlow's and the float64 loop give 0).
  Tensor x = Tensor::from_vector(std::vector<float>{kNaN, 2.f, -1.f}, {3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::relu(x);
  auto g = tape.gradient(ops::sum(y), {x})[0].to_vector<float>();
  EXPECT_TRUE(std::isnan(y.to_vector<float>()[0]));
  EXPECT_TRUE(std::isfinite(g[0]));
  EXPECT_EQ(g[1], 1.f);
  EXPECT_EQ(g[2], 0.f);
}

TEST(NaNPropagation, LeakyReluKeepsNaN) {
  Tensor y = ops::leaky_relu(Tensor::from_vector(std::vector<float>{kNaN, -1.f, 2.f}, {3}), 0.5);
  auto v = y.to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], -0.5f);
  EXPECT_EQ(v[2], 2.f);
}

TEST(NaNPropagation, ClipMaximumMinimumKeepNaN) {
  for (DType dt : {DType::float32, DType::float64}) {
    Tensor x = Tensor::from_vector(std::vector<float>{kNaN, -5.f, 0.5f, 5.f, kInf}, {5}).astype(dt);
    Tensor c = ops::clip(x, -1.0, 1.0).astype(DType::float64);
    expect_same(c.to_vector<double>(), {NAN, -1, 0.5, 1, 1}, "clip");
    Tensor b = Tensor::from_vector(std::vector<float>{0.f, kNaN, 1.f, 1.f, 0.f}, {5}).astype(dt);
    expect_same(ops::maximum(x, b).astype(DType::float64).to_vector<double>(), {NAN, NAN, 1, 5, INFINITY}, "maximum");
    expect_same(ops::minimum(x, b).astype(DType::float64).to_vector<double>(), {NAN, NAN, 0.5, 1, 0}, "minimum");
  }
}

TEST(NaNPropagation, MaxPoolingKeepsNaNForwardAndBackward) {
  // (1, 4, 4, 4): every window of 2x2 holds one NaN at a different position per channel; a
  // last channel-group lane count (5 channels) exercises the scalar tail too.
  for (int64_t channels : {4, 5}) {
    for (DType dt : {DType::float32, DType::float64}) {
      std::vector<float> v(static_cast<size_t>(16 * channels));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7);
      // Window (0, 0) of channel c: NaN at window position c % 4.
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t kh = (c % 4) / 2, kw = c % 2;
        v[static_cast<size_t>((kh * 4 + kw) * channels + c)] = kNaN;
      }
      Tensor x = Tensor::from_vector(v, {1, 4, 4, channels}).astype(dt);
      Tensor y = ops::max_pool2d(x, {2, 2}, {2, 2});  // no tape: the inference kernel
      auto yv = y.astype(DType::float64).to_vector<double>();
      for (int64_t c = 0; c < channels; ++c) EXPECT_TRUE(std::isnan(yv[static_cast<size_t>(c)])) << "channel " << c;
      // The other windows hold no NaN and keep their maxima.
      EXPECT_FALSE(std::isnan(yv[static_cast<size_t>(channels)]));
      x.set_requires_grad(true);
      GradientTape tape;
      Tensor yt = ops::max_pool2d(x, {2, 2}, {2, 2});  // training kernel, with indices
      auto ytv = yt.astype(DType::float64).to_vector<double>();
      for (int64_t c = 0; c < channels; ++c) EXPECT_TRUE(std::isnan(ytv[static_cast<size_t>(c)]));
      // The backward runs, and window (0, 0)'s gradient goes to its NaN's position.
      auto g = tape.gradient(ops::sum(yt), {x})[0].astype(DType::float64).to_vector<double>();
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t kh = (c % 4) / 2, kw = c % 2;
        EXPECT_EQ(g[static_cast<size_t>((kh * 4 + kw) * channels + c)], 1.0) << "channel " << c;
      }
    }
  }
}

TEST(NaNPropagation, DirectConvolutionReluKeepsNaN) {
  if (!cpu::conv_direct_available()) GTEST_SKIP() << "the direct convolution kernels need AVX2 and FMA";
  // (1, 3, 3, 8) x (1, 1, 8, 8) 1x1 convolution with relu: the direct kernel's fused relu.
  std::vector<float> xv(72, 1.f), kv(64, 0.f);
  for (int i = 0; i < 8; ++i) kv[static_cast<size_t>(i * 8 + i)] = -1.f;  // y = relu(-x)
  xv[9] = kNaN;                                                          // pixel 1, channel 1
  Tensor x = Tensor::from_vector(xv, {1, 3, 3, 8}), k = Tensor::from_vector(kv, {1, 1, 8, 8});
  ASSERT_TRUE(cpu::conv2d_direct_supported(k.shape(), ConvParams{}, "relu"));
  // The chooser may pick oneDNN, whose fused relu maps NaN to 0 (see instrumentation.h): this
  // test is about the direct kernel, so it runs that one.
  cpu::force_conv_candidate(cpu::ConvCandidate::direct);
  auto y = ops::conv2d(x, k, {}, {.activation = "relu"}).to_vector<float>();
  cpu::force_conv_candidate(std::nullopt);
  for (size_t i = 0; i < y.size(); ++i) {  // pixel 1's every output reads the NaN (NaN * 0 is NaN)
    if (i >= 8 && i < 16) EXPECT_TRUE(std::isnan(y[i])) << i;
    else EXPECT_EQ(y[i], 0.f) << i;
  }
}
