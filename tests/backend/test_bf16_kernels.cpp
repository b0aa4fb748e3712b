// The bfloat16 kernels of conv2d (forward, backward data, backward weights), matmul and dense
// (backend/bf16_compute.h) against the plain-loop references run in float64 on the same
// bfloat16 values: a bfloat16 kernel that accumulates in float32 must give the reference rounded
// to bfloat16, up to one rounding step. This machine may lack AVX512-BF16: the kernels are then
// forced on, and oneDNN emulates the instructions (same results, slower). Also: the switch, the
// float32 path with its one-time notice, and gradients through a bfloat16 convolution.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/autodiff.h"
#include "backend/bf16_compute.h"
#include "backend/cpu/conv_onednn.h"
#include "backend/cpu/reference_conv.h"
#include "backend/cpu/reference_linalg.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"

using namespace keras;

namespace {

Tensor random_bf16(const Shape& shape, uint32_t seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& f : v) f = u(gen);
  return Tensor::from_vector(v, shape).astype(DType::bfloat16);
}

// The exact values of a bfloat16 tensor, in float64 (the references' dtype).
Tensor f64(const Tensor& t) { return t.defined() ? t.astype(DType::float32).astype(DType::float64) : t; }

// ours (bfloat16) against the float64 reference: within one bfloat16 rounding step of each value
// (2^-8 relative, two steps allowed for a rounding boundary crossed by float32 accumulation) plus
// a float32 accumulation allowance on the output's scale. `rounded_before` (optional): a value
// the op rounded to bfloat16 on the way (conv2d_transpose's sum before its bias, as TensorFlow's
// bias_add after a bfloat16 convolution rounds twice); its rounding step is allowed too.
void expect_bf16_close(const Tensor& ours, const Tensor& ref, const std::string& what,
                       const Tensor& rounded_before = {}) {
  ASSERT_EQ(ours.dtype(), DType::bfloat16) << what;
  ASSERT_EQ(ours.shape(), ref.shape()) << what;
  auto a = ours.astype(DType::float32).to_vector<float>();
  auto r = ref.to_vector<double>();
  auto m = rounded_before.defined() ? rounded_before.to_vector<double>() : std::vector<double>(r.size(), 0.0);
  double scale = 0;
  for (double v : r) scale = std::max(scale, std::fabs(v));
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double tol = std::ldexp(std::fabs(r[i]) + std::fabs(m[i]), -7) + 1e-5 * scale;
    if (std::fabs(a[i] - r[i]) > tol && ++bad <= 3)
      ADD_FAILURE() << what << " [" << i << "]: " << a[i] << " vs reference " << r[i] << " (tolerance " << tol << ")";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size() << " values off";
}

// The kernels forced on; skips where oneDNN has no bfloat16 kernels (CPUs without AVX-512).
#define REQUIRE_BF16_KERNELS(scope)                                                        \
  ScopedBf16Kernels scope(true);                                                           \
  if (!bf16_kernels_enabled(DeviceKind::cpu))                                              \
  GTEST_SKIP() << "oneDNN has no bfloat16 kernels on this CPU (they need AVX-512)"

struct ConvCase {
  Shape x, k;
  ConvParams p;
  std::string act;
};

ConvParams params(int64_t stride, int64_t dilation, int64_t pad, int64_t groups = 1) {
  ConvParams p;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
  p.groups = groups;
  return p;
}

std::vector<ConvCase> conv_cases() {
  return {
      {{2, 9, 9, 16}, {3, 3, 16, 32}, params(1, 1, 1), "relu"},  // "same" 3x3 with bias and relu
      {{2, 11, 10, 8}, {5, 5, 8, 16}, params(2, 1, 0), "linear"},  // strided, valid
      {{1, 12, 12, 8}, {3, 3, 8, 8}, params(1, 2, 2), "tanh"},     // dilated
      {{2, 7, 7, 32}, {1, 1, 32, 64}, params(1, 1, 0), "linear"},  // pointwise
      {{2, 8, 8, 16}, {3, 3, 1, 16}, params(1, 1, 1, 16), "relu"},  // depthwise
  };
}

Shape output_shape(const ConvCase& c) {
  const ConvParams& p = c.p;
  auto out = [](int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad) { return (in + 2 * pad - d * (k - 1) - 1) / s + 1; };
  return {c.x[0], out(c.x[1], c.k[0], p.stride_h, p.dilation_h, p.pad_top),
          out(c.x[2], c.k[1], p.stride_w, p.dilation_w, p.pad_left), c.k[3]};
}

}  // namespace

TEST(Bf16Kernels, Conv2dForwardIsThePlainLoopRounded) {
  REQUIRE_BF16_KERNELS(on);
  uint32_t seed = 1;
  for (const ConvCase& c : conv_cases()) {
    Tensor x = random_bf16(c.x, seed++), k = random_bf16(c.k, seed++), b = random_bf16({c.k[3]}, seed++);
    const uint64_t runs = bf16_kernel_runs();
    Tensor y = ops::conv2d_explicit(x, k, b, c.p, c.act);
    EXPECT_EQ(bf16_kernel_runs(), runs + 1) << "the bfloat16 kernel did not run";
    // ... on oneDNN's bfloat16 primitive, not the float32 fallback for problems oneDNN declines.
    cpu::ConvProblem pr{c.x, c.k, y.shape(), c.p, dnnl::memory::data_type::bf16};
    EXPECT_TRUE(cpu::onednn_conv_forward_offered(pr, true, c.act, false, dnnl::algorithm::convolution_direct))
        << shape_str(c.x) << " * " << shape_str(c.k);
    expect_bf16_close(y, cpu::reference_conv2d(f64(x), f64(k), f64(b), c.p, c.act),
                      "conv2d " + shape_str(c.x) + " * " + shape_str(c.k) + " " + c.act);
  }
}

TEST(Bf16Kernels, Conv2dBackwardDataAndWeightsAreThePlainLoopsRounded) {
  REQUIRE_BF16_KERNELS(on);
  uint32_t seed = 100;
  for (const ConvCase& c : conv_cases()) {
    const Shape ys = output_shape(c);
    Tensor x = random_bf16(c.x, seed++), k = random_bf16(c.k, seed++), dy = random_bf16(ys, seed++);
    const std::string what = shape_str(c.x) + " * " + shape_str(c.k);
    const uint64_t runs = bf16_kernel_runs();
    Tensor dx = ops::conv2d_backward_data(dy, k, c.x, c.p);
    TensorList dk = ops::conv2d_backward_weights(x, dy, c.k, c.p, /*with_bias=*/true);
    EXPECT_EQ(bf16_kernel_runs(), runs + 2);
    expect_bf16_close(dx, cpu::reference_conv2d_backward_data(f64(dy), f64(k), c.x, c.p), "backward data " + what);
    expect_bf16_close(dk[0], cpu::reference_conv2d_backward_weights(f64(x), f64(dy), c.k, c.p),
                      "backward weights " + what);
    expect_bf16_close(dk[1], ops::sum(f64(dy), {0, 1, 2}), "bias gradient " + what);
  }
}

TEST(Bf16Kernels, Conv2dTransposeAddsItsBias) {
  REQUIRE_BF16_KERNELS(on);
  Tensor x = random_bf16({2, 5, 5, 8}, 7), k = random_bf16({3, 3, 4, 8}, 8), b = random_bf16({4}, 9);
  Tensor y = ops::conv2d_transpose(x, k, b, {.strides = {2, 2}, .padding = "same"});
  // The float64 kernel (plain loops) on the same values, with and without the bias.
  Tensor ref = ops::conv2d_transpose(f64(x), f64(k), f64(b), {.strides = {2, 2}, .padding = "same"});
  Tensor before_bias = ops::conv2d_transpose(f64(x), f64(k), {}, {.strides = {2, 2}, .padding = "same"});
  expect_bf16_close(y, ref, "conv2d_transpose with bias", before_bias);
}

TEST(Bf16Kernels, MatmulAndDenseAreThePlainLoopsRounded) {
  REQUIRE_BF16_KERNELS(on);
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  uint32_t seed = 200;
  for (const Case& c : std::vector<Case>{{{33, 70}, {70, 20}, false, false},
                                         {{70, 33}, {20, 70}, true, true},
                                         {{3, 4, 16, 24}, {24, 8}, false, false},
                                         {{3, 16, 24}, {3, 8, 24}, false, true}}) {
    Tensor a = random_bf16(c.a, seed++), b = random_bf16(c.b, seed++);
    const uint64_t runs = bf16_kernel_runs();
    Tensor y = ops::matmul(a, b, c.ta, c.tb);
    EXPECT_EQ(bf16_kernel_runs(), runs + 1);
    expect_bf16_close(y, cpu::reference_matmul(f64(a), f64(b), c.ta, c.tb), "matmul " + shape_str(c.a) + " @ " + shape_str(c.b));
  }
  Tensor x = random_bf16({40, 64}, 300), w = random_bf16({64, 48}, 301), bias = random_bf16({48}, 302);
  for (const std::string act : {"linear", "relu", "gelu"})
    expect_bf16_close(ops::dense(x, w, bias, act), cpu::reference_dense(f64(x), f64(w), f64(bias), act), "dense " + act);
}

TEST(Bf16Kernels, GradientsThroughABFloat16ConvolutionMatchTheFloat32Path) {
  REQUIRE_BF16_KERNELS(on);
  Tensor x = random_bf16({2, 8, 8, 4}, 400), k = random_bf16({3, 3, 4, 8}, 401);
  auto grads = [&] {
    Tensor xv = x.clone().set_requires_grad(true), kv = k.clone().set_requires_grad(true);
    GradientTape tape;
    Tensor y = ops::conv2d(xv, kv, {}, {.padding = "same", .activation = "relu"});
    Tensor loss = ops::sum(ops::square(ops::cast(y, DType::float32)));
    return tape.gradient(loss, {xv, kv});
  };
  TensorList native = grads();
  TensorList float32;
  {
    ScopedBf16Kernels off(false);
    float32 = grads();
  }
  for (size_t i = 0; i < native.size(); ++i) {
    ASSERT_EQ(native[i].dtype(), DType::bfloat16);
    expect_bf16_close(native[i], f64(float32[i]), i == 0 ? "dx" : "dkernel");
  }
}

TEST(Bf16Kernels, SwitchedOffTheOpsComputeInFloat32AndSaySoOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the notice is once per process
  auto run_two_ops_switched_off = [] {
    ScopedBf16Kernels off(false);
    const uint64_t runs = bf16_kernel_runs();
    Tensor y = ops::conv2d(random_bf16({1, 6, 6, 4}, 500), random_bf16({3, 3, 4, 4}, 501));
    Tensor z = ops::matmul(random_bf16({4, 8}, 502), random_bf16({8, 4}, 503));
    std::exit(bf16_kernel_runs() == runs && y.dtype() == DType::bfloat16 && z.dtype() == DType::bfloat16 ? 0 : 1);
  };
  EXPECT_EXIT(run_two_ops_switched_off(), testing::ExitedWithCode(0),
      "^keras: bfloat16 op 'conv2d' \\(and every later one\\) computes in float32[^\n]*\n$");
}

TEST(Bf16Kernels, FloatSixteenAndMixedInputsKeepTheFloat32Path) {
  REQUIRE_BF16_KERNELS(on);
  const uint64_t runs = bf16_kernel_runs();
  Tensor a16 = random_bf16({8, 8}, 600).astype(DType::float16);
  EXPECT_EQ(ops::matmul(a16, a16).dtype(), DType::float16);
  EXPECT_EQ(bf16_kernel_runs(), runs);  // float16 has no bfloat16 kernel
}

TEST(Bf16Kernels, TheDefaultFollowsTheCpu) {
  // Without a scope or KERAS_BF16_KERNELS the kernels run exactly where the CPU has the instructions.
  if (std::getenv("KERAS_BF16_KERNELS")) GTEST_SKIP() << "KERAS_BF16_KERNELS is set";
  EXPECT_EQ(bf16_kernels_enabled(DeviceKind::cpu), cpu_has_bf16_instructions());
  EXPECT_FALSE(bf16_kernels_enabled(DeviceKind::cuda));
  {
    ScopedBf16Kernels off(false);
    EXPECT_FALSE(bf16_kernels_enabled(DeviceKind::cpu));
  }
  EXPECT_EQ(bf16_kernels_enabled(DeviceKind::cpu), cpu_has_bf16_instructions());
}
