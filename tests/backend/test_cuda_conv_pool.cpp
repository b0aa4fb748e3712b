// Convolutions (cuDNN, backend/cuda/conv_ops.cpp) and pooling (backend/cuda/pool_ops.cpp) on the
// GPU against the CPU kernels: forward through the public ops that layers call (ops::conv2d,
// conv1d, depthwise_conv2d, conv2d_transpose, conv2d_explicit, max_pool2d, avg_pool2d), the
// registered backward ops called directly, and gradients through the tape. Geometry covers 3x3
// same/valid, stride 2 with TF's asymmetric "same" pads, causal and explicit asymmetric pads,
// dilation 2, groups 2, depthwise, 1x1, fused bias + activations, batches 1 and 3, odd spatial
// sizes; float64 too. The direct kernels (cuDNN's fallback), deterministic algorithm choice and
// TF32 mode are checked as well. Every test but the device-free one skips without a GPU.
//
// Tolerances: float32 within 1e-4 of the result's scale (cuDNN sums in other orders, and may
// pick Winograd or FFT algorithms), float64 within 1e-10; max pooling exactly (values, indices
// and gradients), since its kernels compare and sum in the CPU's order.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <ostream>
#include <string>

#include "backend/autodiff.h"
#include "backend/cuda.h"
#include "backend/op_registry.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/ops_nn.h"
#include "backend/random.h"
#include "support/cuda_test.h"

using namespace keras;


namespace {

const Device kGpu = Device::cuda(0);

// max |a - b| / max(1, max |b|): relative to the result's scale, absolute near zero.
double rel_err(const Tensor& got_in, const Tensor& want_in) {
  EXPECT_EQ(shape_str(got_in.shape()), shape_str(want_in.shape()));
  EXPECT_EQ(got_in.dtype(), want_in.dtype());
  if (got_in.shape() != want_in.shape()) return 1e300;
  std::vector<double> g = got_in.to(Device::cpu()).to_vector<double>(), w = want_in.to(Device::cpu()).to_vector<double>();
  double diff = 0, scale = 1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) != std::isnan(g[i])) return 1e300;
    if (std::isnan(w[i])) continue;
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / scale;
}

// Bitwise-equal values (NaN equals NaN), any dtype.
bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  std::vector<double> x = a.to(Device::cpu()).to_vector<double>(), y = b.to(Device::cpu()).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (x[i] != y[i]) return false;
  }
  return true;
}

double tolerance(DType t) { return t == DType::float64 ? 1e-10 : 1e-4; }

Tensor input(const Shape& shape, DType dtype, uint64_t seed) { return random::normal(shape, 0.0, 1.0, seed, dtype); }

// ---- convolution cases: one forward through a public op, inputs x, kernel[, bias] ----

struct ConvCase {
  std::string name;
  Shape x, kernel;
  bool bias = false;
  std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> fn;
  DType dtype = DType::float32;
  bool grad = true;  // the fused activation is differentiable from its output
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

using F = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
F conv(ops::Conv2DArgs a) {
  return [a](const Tensor& x, const Tensor& k, const Tensor& b) { return ops::conv2d(x, k, b, a); };
}
F explicit_pads(ConvParams p, std::string act = "linear") {
  return [p, act](const Tensor& x, const Tensor& k, const Tensor& b) { return ops::conv2d_explicit(x, k, b, p, act); };
}

std::vector<ConvCase> conv_cases() {
  using A = ops::Conv2DArgs;
  ConvParams lopsided;  // more pad before than after on one axis, after only on the other
  lopsided.pad_top = 2, lopsided.pad_bottom = 0, lopsided.pad_left = 0, lopsided.pad_right = 1;
  ConvParams lopsided_s2 = lopsided;
  lopsided_s2.stride_h = 2, lopsided_s2.stride_w = 3, lopsided_s2.dilation_w = 2;
  const DType f64 = DType::float64;
  return {
      {"same_3x3", {2, 7, 9, 4}, {3, 3, 4, 5}, false, conv(A{.padding = "same"})},
      {"valid_3x3_batch3", {3, 8, 7, 3}, {3, 3, 3, 6}, false, conv(A{})},
      {"same_3x3_batch1_odd", {1, 9, 11, 2}, {3, 3, 2, 3}, false, conv(A{.padding = "same"})},
      {"stride2_same_asymmetric", {2, 8, 10, 3}, {3, 3, 3, 4}, false, conv(A{.strides = {2, 2}, .padding = "same"})},
      {"stride2_same_odd", {3, 9, 7, 2}, {3, 3, 2, 3}, false, conv(A{.strides = {2, 2}, .padding = "same"})},
      {"stride2_valid", {2, 9, 8, 3}, {3, 3, 3, 2}, false, conv(A{.strides = {2, 2}})},
      {"kernel2_same", {2, 5, 6, 3}, {2, 2, 3, 2}, false, conv(A{.padding = "same"})},
      {"kernel4x5_same", {1, 7, 9, 2}, {4, 5, 2, 3}, false, conv(A{.padding = "same"})},
      {"dilation2_same", {2, 9, 9, 3}, {3, 3, 3, 4}, false, conv(A{.padding = "same", .dilation_rate = {2, 2}})},
      {"dilation2_valid", {1, 10, 8, 2}, {3, 2, 2, 3}, false, conv(A{.dilation_rate = {2, 3}})},
      {"groups2_same", {2, 6, 7, 4}, {3, 3, 2, 6}, false, conv(A{.padding = "same", .groups = 2})},
      {"groups2_stride2", {3, 7, 8, 6}, {3, 3, 3, 4}, true, conv(A{.strides = {2, 2}, .padding = "same", .groups = 2})},
      {"depthwise",
       {2, 7, 7, 3},
       {3, 3, 3, 2},
       true,
       [](const Tensor& x, const Tensor& k, const Tensor& b) {
         return ops::depthwise_conv2d(x, k, b, ops::DepthwiseConv2DArgs{.padding = "same"});
       }},
      {"depthwise_stride2",
       {1, 8, 9, 5},
       {3, 3, 5, 1},
       false,
       [](const Tensor& x, const Tensor& k, const Tensor& b) {
         return ops::depthwise_conv2d(x, k, b, ops::DepthwiseConv2DArgs{.strides = {2, 2}, .padding = "same"});
       }},
      {"pointwise_1x1", {3, 5, 5, 8}, {1, 1, 8, 4}, true, conv(A{})},
      {"bias_relu", {2, 6, 6, 3}, {3, 3, 3, 4}, true, conv(A{.padding = "same", .activation = "relu"})},
      {"bias_sigmoid", {2, 6, 5, 3}, {3, 3, 3, 4}, true, conv(A{.padding = "same", .activation = "sigmoid"})},
      {"bias_tanh", {1, 6, 5, 3}, {3, 3, 3, 4}, true, conv(A{.activation = "tanh"})},
      {"bias_elu", {2, 5, 5, 3}, {3, 3, 3, 2}, true, conv(A{.padding = "same", .activation = "elu"})},
      {"gelu_inference", {2, 5, 5, 3}, {3, 3, 3, 2}, true, conv(A{.padding = "same", .activation = "gelu"}),
       DType::float32, false},
      {"swish_inference", {2, 5, 5, 3}, {3, 3, 3, 2}, true, conv(A{.padding = "same", .activation = "swish"}),
       DType::float32, false},
      {"relu6_inference", {2, 5, 5, 3}, {3, 3, 3, 2}, true, conv(A{.padding = "same", .activation = "relu6"}),
       DType::float32, false},
      {"explicit_lopsided_pads", {2, 6, 7, 3}, {3, 3, 3, 2}, false, explicit_pads(lopsided)},
      {"explicit_lopsided_strided", {2, 9, 10, 2}, {3, 2, 2, 3}, true, explicit_pads(lopsided_s2, "relu")},
      {"conv1d_causal_dilated",
       {2, 11, 3},
       {3, 3, 4},
       true,
       [](const Tensor& x, const Tensor& k, const Tensor& b) {
         return ops::conv1d(x, k, b, ops::Conv1DArgs{.padding = "causal", .dilation_rate = 2});
       }},
      {"transpose_stride2_same",
       {2, 4, 5, 3},
       {3, 3, 2, 3},
       true,
       [](const Tensor& x, const Tensor& k, const Tensor& b) {
         return ops::conv2d_transpose(x, k, b, ops::Conv2DTransposeArgs{.strides = {2, 2}, .padding = "same"});
       }},
      {"transpose_valid",
       {1, 3, 4, 2},
       {3, 2, 3, 2},
       false,
       [](const Tensor& x, const Tensor& k, const Tensor& b) {
         return ops::conv2d_transpose(x, k, b, ops::Conv2DTransposeArgs{.strides = {2, 1}});
       }},
      {"larger_same", {8, 32, 32, 16}, {3, 3, 16, 32}, true, conv(A{.padding = "same", .activation = "relu"})},
      {"larger_stride2", {4, 33, 32, 16}, {5, 5, 16, 8}, false, conv(A{.strides = {2, 2}, .padding = "same"})},
      {"f64_same", {2, 7, 6, 3}, {3, 3, 3, 4}, true, conv(A{.padding = "same", .activation = "tanh"}), f64},
      {"f64_stride2_asymmetric", {2, 8, 8, 2}, {3, 3, 2, 3}, false, conv(A{.strides = {2, 2}, .padding = "same"}),
       f64},
      {"f64_groups2_dilated", {1, 9, 8, 4}, {3, 3, 2, 4}, true,
       conv(A{.padding = "same", .dilation_rate = {2, 2}, .groups = 2}), f64},
      {"f64_depthwise",
       {2, 6, 6, 3},
       {3, 3, 3, 1},
       false,
       [](const Tensor& x, const Tensor& k, const Tensor& b) {
         return ops::depthwise_conv2d(x, k, b, ops::DepthwiseConv2DArgs{.strides = {2, 2}, .padding = "same"});
       },
       f64},
      {"f64_explicit_lopsided", {2, 6, 7, 3}, {3, 3, 3, 2}, false, explicit_pads(lopsided), f64},
  };
}

struct ConvRun {
  TensorList inputs;  // x, kernel, bias (undefined without)
};

ConvRun conv_inputs(const ConvCase& c, Device d) {
  ConvRun r;
  r.inputs.push_back(input(c.x, c.dtype, 11).to(d));
  r.inputs.push_back(input(c.kernel, c.dtype, 12).to(d));
  // conv2d_transpose's bias has the output channels: kernel.shape[2]; the rest kernel's last.
  int64_t bias_len = c.name.rfind("transpose", 0) == 0 ? c.kernel[2]
                     : c.name.find("depthwise") != std::string::npos
                         ? c.kernel[2] * c.kernel[3]
                         : c.kernel.back();
  r.inputs.push_back(c.bias ? input({bias_len}, c.dtype, 13).to(d) : Tensor());
  return r;
}

class CudaConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CudaConv, ForwardMatchesCpu) {
  REQUIRE_CUDA();
  const ConvCase& c = GetParam();
  ConvRun cpu = conv_inputs(c, Device::cpu()), gpu = conv_inputs(c, kGpu);
  Tensor want = c.fn(cpu.inputs[0], cpu.inputs[1], cpu.inputs[2]);
  Tensor got = c.fn(gpu.inputs[0], gpu.inputs[1], gpu.inputs[2]);
  EXPECT_EQ(got.device(), kGpu);
  EXPECT_LE(rel_err(got, want), tolerance(c.dtype)) << c.name;
}

// Gradients of sum(y * r) (r fixed and random, so that dy is not constant) w.r.t. x, the kernel
// and the bias, through the tape: conv2d's gradient, the backward ops and the activation grad.
TEST_P(CudaConv, GradientsMatchCpu) {
  REQUIRE_CUDA();
  const ConvCase& c = GetParam();
  if (!c.grad) GTEST_SKIP() << "activation fused only without a gradient";
  auto grads = [&](Device d) {
    GradientTape tape;
    ConvRun run = conv_inputs(c, d);
    TensorList sources;
    for (auto& t : run.inputs)
      if (t.defined()) {
        t.set_requires_grad(true);
        sources.push_back(t);
      }
    Tensor y = c.fn(run.inputs[0], run.inputs[1], run.inputs[2]);
    Tensor r = input(y.shape(), c.dtype, 14).to(d);
    Tensor loss = ops::sum(ops::multiply(y, r));
    TensorList g = compute_gradients(loss, sources);
    g.push_back(loss);
    return g;
  };
  TensorList want = grads(Device::cpu()), got = grads(kGpu);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(got[i].defined()) << c.name << " gradient " << i;
    EXPECT_EQ(got[i].device(), kGpu);
    EXPECT_LE(rel_err(got[i], want[i]), tolerance(c.dtype)) << c.name << " gradient " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaConv, ::testing::ValuesIn(conv_cases()),
                         [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

// ---- the registered backward ops called directly (no tape), with their bias forms ----

struct Geometry {
  std::string name;
  Shape x, kernel;
  ConvParams p;
};

void PrintTo(const Geometry& g, std::ostream* os) { *os << g.name; }

ConvParams params(int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t t, int64_t b, int64_t l, int64_t r,
                  int64_t groups = 1) {
  ConvParams p;
  p.stride_h = sh, p.stride_w = sw, p.dilation_h = dh, p.dilation_w = dw;
  p.pad_top = t, p.pad_bottom = b, p.pad_left = l, p.pad_right = r, p.groups = groups;
  return p;
}

std::vector<Geometry> geometries() {
  return {
      {"same_3x3", {2, 7, 9, 4}, {3, 3, 4, 5}, params(1, 1, 1, 1, 1, 1, 1, 1)},
      {"stride2_tf_same", {3, 8, 10, 3}, {3, 3, 3, 4}, params(2, 2, 1, 1, 0, 1, 0, 1)},
      {"stride2_more_before", {2, 9, 9, 2}, {3, 3, 2, 3}, params(2, 2, 1, 1, 2, 0, 1, 0)},
      {"dilated_asymmetric", {1, 10, 9, 3}, {3, 3, 3, 2}, params(1, 1, 2, 2, 1, 3, 2, 2)},
      {"groups3_stride", {2, 7, 8, 6}, {2, 3, 2, 9}, params(2, 1, 1, 1, 0, 1, 1, 1, 3)},
      {"depthwise", {2, 6, 6, 4}, {3, 3, 1, 4}, params(1, 1, 1, 1, 1, 1, 1, 1, 4)},
      {"uncovered_rows", {1, 9, 8, 2}, {2, 2, 2, 3}, params(3, 3, 1, 1, 0, 0, 0, 0)},  // stride > kernel
  };
}

Tensor out_like(const Geometry& g, DType t, Device d, uint64_t seed) {
  Shape y = {g.x[0],
             (g.x[1] + g.p.pad_top + g.p.pad_bottom - (g.p.dilation_h * (g.kernel[0] - 1) + 1)) / g.p.stride_h + 1,
             (g.x[2] + g.p.pad_left + g.p.pad_right - (g.p.dilation_w * (g.kernel[1] - 1) + 1)) / g.p.stride_w + 1,
             g.kernel[3]};
  return input(y, t, seed).to(d);
}

class CudaConvBackward : public ::testing::TestWithParam<Geometry> {};

TEST_P(CudaConvBackward, OpsMatchCpu) {
  REQUIRE_CUDA();
  const Geometry& g = GetParam();
  for (DType t : {DType::float32, DType::float64}) {
    SCOPED_TRACE(g.name + " " + dtype_name(t));
    auto run = [&](Device d) {
      Tensor x = input(g.x, t, 21).to(d), k = input(g.kernel, t, 22).to(d), dy = out_like(g, t, d, 23);
      Tensor b = input({g.x[3]}, t, 24).to(d);
      TensorList out;
      out.push_back(ops::conv2d_explicit(x, k, Tensor(), g.p));
      out.push_back(ops::conv2d_backward_data(dy, k, g.x, g.p));
      TensorList w = ops::conv2d_backward_weights(x, dy, g.kernel, g.p, true);
      out.insert(out.end(), w.begin(), w.end());
      out.push_back(ops::conv2d_backward_weights(x, dy, g.kernel, g.p, false)[0]);
      // conv2d_transpose's form: backward data with the bias fused.
      Attrs a = g.p.to_attrs();
      a.set("input_shape", std::vector<int64_t>(g.x.begin(), g.x.end()));
      out.push_back(run_op1(OpRegistry::instance().find("conv2d_backward_data"), {dy, k, b}, a));
      return out;
    };
    TensorList want = run(Device::cpu()), got = run(kGpu);
    const char* names[] = {"forward", "backward_data", "backward_weights", "bias_grad", "backward_weights_no_bias",
                           "backward_data_bias"};
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(rel_err(got[i], want[i]), tolerance(t)) << names[i];
  }
}

// The direct kernels: cuDNN's fallback for what it declines, forced here on every geometry.
TEST_P(CudaConvBackward, DirectKernelsMatchCpu) {
  REQUIRE_CUDA();
  const Geometry& g = GetParam();
  cuda::set_conv_force_direct(true);
  const cuda::ConvCounters before = cuda::conv_counters();
  for (DType t : {DType::float32, DType::float64}) {
    SCOPED_TRACE(g.name + " " + dtype_name(t));
    auto run = [&](Device d) {
      Tensor x = input(g.x, t, 31).to(d), k = input(g.kernel, t, 32).to(d), dy = out_like(g, t, d, 33);
      return TensorList{ops::conv2d_explicit(x, k, Tensor(), g.p), ops::conv2d_backward_data(dy, k, g.x, g.p),
                        ops::conv2d_backward_weights(x, dy, g.kernel, g.p, false)[0]};
    };
    TensorList want = run(Device::cpu()), got = run(kGpu);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_LE(rel_err(got[i], want[i]), tolerance(t)) << "output " << i;
  }
  const cuda::ConvCounters after = cuda::conv_counters();
  cuda::set_conv_force_direct(false);
  EXPECT_EQ(after.cudnn_runs, before.cudnn_runs);
  EXPECT_EQ(after.direct_runs, before.direct_runs + 6);
}

INSTANTIATE_TEST_SUITE_P(Geometries, CudaConvBackward, ::testing::ValuesIn(geometries()),
                         [](const ::testing::TestParamInfo<Geometry>& info) { return info.param.name; });

// ---- paths and switches ----

TEST(CudaConvPaths, Float32RunsOnCudnnAndCachesTheAlgorithm) {
  REQUIRE_CUDA();
  Tensor x = input({2, 9, 9, 4}, DType::float32, 1).to(kGpu), k = input({3, 3, 4, 8}, DType::float32, 2).to(kGpu);
  auto fwd = [&] { return ops::conv2d(x, k, Tensor(), ops::Conv2DArgs{.strides = {2, 2}, .padding = "same"}); };
  Tensor first = fwd();
  const cuda::ConvCounters after_first = cuda::conv_counters();
  Tensor second = fwd();
  const cuda::ConvCounters after_second = cuda::conv_counters();
  EXPECT_GT(after_first.cudnn_runs, 0u) << "cuDNN never ran a float32 convolution";
  EXPECT_EQ(after_second.cudnn_runs, after_first.cudnn_runs + 1);
  EXPECT_EQ(after_second.algorithm_searches, after_first.algorithm_searches) << "the second call searched again";
  EXPECT_TRUE(same_values(first, second));
  // float64: cuDNN where it takes the problem, else the direct kernels; both are fine, say which.
  const cuda::ConvCounters before64 = cuda::conv_counters();
  ops::conv2d(x.astype(DType::float64), k.astype(DType::float64), Tensor(), ops::Conv2DArgs{.padding = "same"});
  const cuda::ConvCounters after64 = cuda::conv_counters();
  std::cout << "float64 convolution ran on " << (after64.cudnn_runs > before64.cudnn_runs ? "cuDNN" : "the direct kernels")
            << "\n";
}

// Under set_deterministic(true) the algorithms come from cuDNN's heuristics among the
// deterministic ones: repeated runs, a fresh choice included, give the same bits.
TEST(CudaConvPaths, DeterministicModeRepeatsBitForBit) {
  REQUIRE_CUDA();
  const Shape xs{4, 17, 15, 8}, ks{3, 3, 8, 16};
  const ConvParams p = params(2, 2, 1, 1, 0, 1, 1, 1);
  Tensor x = input(xs, DType::float32, 41).to(kGpu), k = input(ks, DType::float32, 42).to(kGpu);
  Tensor dy = out_like(Geometry{"", xs, ks, p}, DType::float32, kGpu, 43);
  auto run = [&] {
    return TensorList{ops::conv2d_explicit(x, k, Tensor(), p), ops::conv2d_backward_data(dy, k, xs, p),
                      ops::conv2d_backward_weights(x, dy, ks, p, false)[0]};
  };
  cuda::set_deterministic(true);
  EXPECT_TRUE(cuda::deterministic());
  TensorList a = run();
  cuda::clear_conv_algorithm_cache();
  TensorList b = run();
  TensorList c = run();
  cuda::set_deterministic(false);
  EXPECT_FALSE(cuda::deterministic());
  TensorList want = [&] {
    Tensor xc = x.to(Device::cpu()), kc = k.to(Device::cpu()), dyc = dy.to(Device::cpu());
    return TensorList{ops::conv2d_explicit(xc, kc, Tensor(), p), ops::conv2d_backward_data(dyc, kc, xs, p),
                      ops::conv2d_backward_weights(xc, dyc, ks, p, false)[0]};
  }();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(same_values(a[i], b[i])) << "output " << i << " after a fresh choice";
    EXPECT_TRUE(same_values(a[i], c[i])) << "output " << i << " repeated";
    EXPECT_LE(rel_err(a[i], want[i]), 1e-4) << "output " << i;
  }
}

// TF32 (cuda::set_allow_tf32; off in tests): results stay near the float32 ones, and the exact
// mode is back (its own cached algorithm) once it is switched off.
TEST(CudaConvPaths, Tf32ModeIsSeparateAndClose) {
  REQUIRE_CUDA();
  Tensor x = input({4, 16, 16, 32}, DType::float32, 51).to(kGpu), k = input({3, 3, 32, 32}, DType::float32, 52).to(kGpu);
  auto fwd = [&] { return ops::conv2d(x, k, Tensor(), ops::Conv2DArgs{.padding = "same"}); };
  Tensor want = ops::conv2d(x.to(Device::cpu()), k.to(Device::cpu()), Tensor(), ops::Conv2DArgs{.padding = "same"});
  const bool before = cuda::allow_tf32();
  cuda::set_allow_tf32(false);
  Tensor exact = fwd();
  cuda::set_allow_tf32(true);
  Tensor fast = fwd();
  cuda::set_allow_tf32(false);
  Tensor exact_again = fwd();
  cuda::set_allow_tf32(before);
  EXPECT_LE(rel_err(exact, want), 1e-4);
  EXPECT_LE(rel_err(fast, want), 2e-2);
  EXPECT_TRUE(same_values(exact, exact_again));
}

TEST(CudaConvPaths, EmptyBatchAndUnfusableActivation) {
  REQUIRE_CUDA();
  Tensor x = Tensor::zeros({0, 5, 5, 3}, DType::float32, kGpu), k = input({3, 3, 3, 2}, DType::float32, 1).to(kGpu);
  Tensor y = ops::conv2d(x, k, Tensor(), ops::Conv2DArgs{.padding = "same"});
  EXPECT_EQ(y.shape(), (Shape{0, 5, 5, 2}));
  // The kernel fuses what the CPU kernel fuses; another name in the op's attrs is a ValueError.
  Attrs a = ConvParams{}.to_attrs();
  a.set("activation", std::string("softplus")).set("prop", std::string("inference"));
  Tensor x1 = input({1, 5, 5, 3}, DType::float32, 2);
  EXPECT_THROW(run_op("conv2d", {x1, k.to(Device::cpu())}, a), ValueError);
  EXPECT_THROW(run_op("conv2d", {x1.to(kGpu), k}, a), ValueError);
}

// ---- pooling ----

struct PoolCase {
  std::string name;
  Shape x;
  ops::Size2 pool, strides;
  std::string padding;
  DType dtype = DType::float32;
};

void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

std::vector<PoolCase> pool_cases() {
  const DType f64 = DType::float64;
  return {
      {"p2s2_valid", {2, 8, 8, 3}, {2, 2}, {2, 2}, "valid"},
      {"p2s2_valid_odd", {3, 7, 9, 2}, {2, 2}, {2, 2}, "valid"},
      {"p2s2_same_odd", {2, 7, 9, 5}, {2, 2}, {2, 2}, "same"},
      {"p3s2_same", {2, 9, 10, 4}, {3, 3}, {2, 2}, "same"},
      {"p3s1_same_overlapping", {1, 6, 7, 3}, {3, 3}, {1, 1}, "same"},
      {"p3s2_valid", {2, 11, 9, 3}, {3, 3}, {2, 2}, "valid"},
      {"p2x3_s1x2_same", {2, 5, 8, 6}, {2, 3}, {1, 2}, "same"},
      {"p2s3_gaps", {1, 8, 8, 2}, {2, 2}, {3, 3}, "valid"},
      {"larger", {8, 32, 32, 16}, {3, 3}, {2, 2}, "same"},
      {"f64_p3s2_same", {2, 9, 8, 3}, {3, 3}, {2, 2}, "same", f64},
      {"f64_p2s2_valid", {3, 6, 7, 2}, {2, 2}, {2, 2}, "valid", f64},
      {"f64_p3s1_same", {1, 5, 6, 4}, {3, 3}, {1, 1}, "same", f64},
  };
}

Attrs pool_attrs(const PoolCase& c) {
  return Attrs{{"pool_size", std::vector<int64_t>{c.pool[0], c.pool[1]}},
               {"strides", std::vector<int64_t>{c.strides[0], c.strides[1]}},
               {"padding", c.padding}};
}

Attrs pool_grad_attrs(const PoolCase& c) {
  Attrs a = pool_attrs(c);
  a.set("input_shape", std::vector<int64_t>(c.x.begin(), c.x.end()));
  return a;
}

class CudaPool : public ::testing::TestWithParam<PoolCase> {};

// The public ops (inference max pooling, no tape) and the registered ops with max pooling's
// indices; max pooling exactly, average within tolerance.
TEST_P(CudaPool, ForwardMatchesCpu) {
  REQUIRE_CUDA();
  const PoolCase& c = GetParam();
  Tensor x = input(c.x, c.dtype, 61);
  Tensor xg = x.to(kGpu);
  Tensor got_max = ops::max_pool2d(xg, c.pool, c.strides, c.padding);
  EXPECT_EQ(got_max.device(), kGpu);
  EXPECT_TRUE(same_values(got_max, ops::max_pool2d(x, c.pool, c.strides, c.padding))) << "max_pool2d_inference";
  EXPECT_LE(rel_err(ops::avg_pool2d(xg, c.pool, c.strides, c.padding), ops::avg_pool2d(x, c.pool, c.strides, c.padding)),
            tolerance(c.dtype))
      << "avg_pool2d";
  TensorList want = run_op("max_pool2d", {x}, pool_attrs(c)), got = run_op("max_pool2d", {xg}, pool_attrs(c));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same_values(got[0], want[0])) << "max_pool2d values";
  EXPECT_EQ(got[1].dtype(), DType::int32);
  EXPECT_TRUE(same_values(got[1], want[1])) << "max_pool2d indices";
}

TEST_P(CudaPool, GradientOpsMatchCpu) {
  REQUIRE_CUDA();
  const PoolCase& c = GetParam();
  Tensor x = input(c.x, c.dtype, 62);
  TensorList fwd = run_op("max_pool2d", {x}, pool_attrs(c));
  Tensor g = input(fwd[0].shape(), c.dtype, 63);
  Tensor want_max = run_op1(OpRegistry::instance().find("max_pool2d_grad"), {g, fwd[1]}, pool_grad_attrs(c));
  Tensor got_max =
      run_op1(OpRegistry::instance().find("max_pool2d_grad"), {g.to(kGpu), fwd[1].to(kGpu)}, pool_grad_attrs(c));
  EXPECT_TRUE(same_values(got_max, want_max)) << "max_pool2d_grad";
  Tensor want_avg = run_op1(OpRegistry::instance().find("avg_pool2d_grad"), {g}, pool_grad_attrs(c));
  Tensor got_avg = run_op1(OpRegistry::instance().find("avg_pool2d_grad"), {g.to(kGpu)}, pool_grad_attrs(c));
  EXPECT_LE(rel_err(got_avg, want_avg), tolerance(c.dtype)) << "avg_pool2d_grad";
}

// Through the tape: max pooling with indices, then average pooling of its output.
TEST_P(CudaPool, TapeGradientsMatchCpu) {
  REQUIRE_CUDA();
  const PoolCase& c = GetParam();
  auto grads = [&](Device d) {
    GradientTape tape;
    Tensor x = input(c.x, c.dtype, 64).to(d);
    x.set_requires_grad(true);
    Tensor m = ops::max_pool2d(x, c.pool, c.strides, c.padding);
    Tensor a = ops::avg_pool2d(x, c.pool, c.strides, c.padding);
    Tensor r = input(m.shape(), c.dtype, 65).to(d);
    Tensor loss = ops::add(ops::sum(ops::multiply(m, r)), ops::sum(ops::multiply(a, a)));
    TensorList g = compute_gradients(loss, {x});
    g.push_back(loss);
    return g;
  };
  TensorList want = grads(Device::cpu()), got = grads(kGpu);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(got[i].defined());
    EXPECT_LE(rel_err(got[i], want[i]), tolerance(c.dtype)) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaPool, ::testing::ValuesIn(pool_cases()),
                         [](const ::testing::TestParamInfo<PoolCase>& info) { return info.param.name; });

// NaN is a window's maximum (its last NaN's position), ties keep the first position, -inf
// windows still point inside: the CPU's convention, value and index.
TEST(CudaPoolEdges, NanTiesAndInfinitiesMatchCpu) {
  REQUIRE_CUDA();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType t : {DType::float32, DType::float64}) {
    std::vector<double> v = {1, nan, 3, 3,     //
                             2, 2, nan, -inf,  //
                             5, 5, -inf, -inf, //
                             5, 5, -inf, -inf};
    Tensor x = Tensor::from_vector(v, {1, 4, 4, 1}, Device::cpu()).astype(t);
    for (const std::string& padding : {"valid", "same"}) {
      PoolCase c{"edges", {1, 4, 4, 1}, {3, 3}, {1, 1}, padding, t};
      TensorList want = run_op("max_pool2d", {x}, pool_attrs(c)), got = run_op("max_pool2d", {x.to(kGpu)}, pool_attrs(c));
      EXPECT_TRUE(same_values(got[0], want[0])) << padding << " " << dtype_name(t);
      EXPECT_TRUE(same_values(got[1], want[1])) << padding << " " << dtype_name(t);
      c.pool = {2, 2}, c.strides = {2, 2};
      want = run_op("max_pool2d", {x}, pool_attrs(c)), got = run_op("max_pool2d", {x.to(kGpu)}, pool_attrs(c));
      EXPECT_TRUE(same_values(got[0], want[0])) << padding << " 2x2 " << dtype_name(t);
      EXPECT_TRUE(same_values(got[1], want[1])) << padding << " 2x2 " << dtype_name(t);
    }
  }
}

TEST(CudaPoolEdges, EmptyBatch) {
  REQUIRE_CUDA();
  Tensor x = Tensor::zeros({0, 6, 6, 2}, DType::float32, kGpu);
  EXPECT_EQ(ops::max_pool2d(x, {2, 2}, {2, 2}).shape(), (Shape{0, 3, 3, 2}));
  EXPECT_EQ(ops::avg_pool2d(x, {3, 3}, {2, 2}, "same").shape(), (Shape{0, 3, 3, 2}));
}

// ---- device-free: the switches exist in every build ----

TEST(CudaConvSwitches, DefaultsAndStubs) {
  EXPECT_FALSE(cuda::deterministic());
  EXPECT_FALSE(cuda::conv_force_direct());
  cuda::set_deterministic(true);
  EXPECT_TRUE(cuda::deterministic());
  cuda::set_deterministic(false);
  if (!cuda::built()) {
    cuda::ConvCounters c = cuda::conv_counters();
    EXPECT_EQ(c.cudnn_runs + c.direct_runs + c.algorithm_searches + c.cached_algorithms, 0u);
  }
}

}  // namespace
