// The bfloat16 kernels of batch normalization and of the elementwise ops between a mixed_bfloat16
// convnet's convolutions (backend/cpu/norm_kernels.cpp, backend/cpu/elementwise_bf16_kernels.cpp)
// against run_op's float32 path on the same values (the kernels switched off): the same bits for
// add, subtract, multiply, relu and relu_grad (NaN, infinities and zeros included); batch
// normalization within one bfloat16 rounding step (float32 accumulation order may differ).
// Also BatchNormalization under mixed_bfloat16: one pass, no casts, the float32 layer's values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "backend/autodiff.h"
#include "backend/bf16_compute.h"
#include "backend/half.h"
#include "backend/op_profile.h"
#include "backend/ops.h"
#include "backend/ops_batch_norm_relu.h"
#include "keras/keras.h"

using namespace keras;

namespace {

// Random values with the specials mixed in.
Tensor special_bf16(const Shape& shape, uint32_t seed, float scale = 2.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // 2e-20 squared and 1e-39 are subnormal (BinaryOpsRoundAsTheScalarCode's point).
  const float specials[] = {0.f, -0.f, inf, -inf, nan, 1e-30f, -1e-30f, 3.0e38f, 2e-20f, -1e-39f};
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 17 == 3 ? specials[(i / 17) % 10] : u(gen);
  return Tensor::from_vector(v, shape).astype(DType::bfloat16);
}

Tensor random_bf16(const Shape& shape, uint32_t seed, float scale = 1.f, float offset = 0.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& f : v) f = u(gen) + offset;
  return Tensor::from_vector(v, shape).astype(DType::bfloat16);
}

std::vector<uint16_t> bits(const Tensor& t) {
  const auto* p = static_cast<const uint16_t*>(t.contiguous().raw_data());
  return {p, p + t.numel()};
}

// f() with the bfloat16 kernels and on the float32 path; every bfloat16 kernel run counted, and
// the conversions (astype) the kernels made: none where they ran in one pass.
template <class F>
std::pair<TensorList, TensorList> both_paths(F&& f, uint64_t* runs = nullptr, uint64_t* conversions = nullptr) {
  ScopedBf16Kernels on(true);
  const uint64_t before = bf16_kernel_runs();
  reset_op_profile();
  set_op_profiling(true);
  TensorList native = f();
  set_op_profiling(false);
  if (runs) *runs = bf16_kernel_runs() - before;
  if (conversions) {
    *conversions = 0;
    for (const auto& e : op_profile())
      if (e.op == "astype") *conversions += e.calls;
  }
  ScopedBf16Kernels off(false);
  return {native, f()};
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), DType::bfloat16) << what;
  ASSERT_EQ(b.dtype(), DType::bfloat16) << what;
  const auto x = bits(a), y = bits(b);
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    // The same bits, or both NaN, or both zero (oneDNN's float32 relu_grad gives -0 for a
    // negative gradient where our kernels and the plain loops give +0).
    const float fx = bfloat16_to_float(x[i]), fy = bfloat16_to_float(y[i]);
    const bool same = x[i] == y[i] || (std::isnan(fx) && std::isnan(fy)) || (fx == 0.f && fy == 0.f);
    if (!same && ++bad <= 3)
      ADD_FAILURE() << what << " [" << i << "]: " << std::hex << x[i] << " vs float32 path " << y[i];
  }
  EXPECT_EQ(bad, 0) << what;
}

// Within one bfloat16 step of the float32 path's value (and both NaN or neither).
void expect_within_a_step(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  const auto x = a.astype(DType::float32).to_vector<float>(), y = b.astype(DType::float32).to_vector<float>();
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float tol = a.dtype() == DType::bfloat16 ? std::ldexp(std::fabs(y[i]), -7) : 1e-5f * (1 + std::fabs(y[i]));
    if (std::isnan(x[i]) != std::isnan(y[i]) || std::fabs(x[i] - y[i]) > tol)
      if (++bad <= 3) ADD_FAILURE() << what << " [" << i << "]: " << x[i] << " vs float32 path " << y[i];
  }
  EXPECT_EQ(bad, 0) << what;
}

// Skips where the bfloat16 kernels cannot be switched on (CPUs without AVX-512).
#define REQUIRE_BF16_KERNELS()                                               \
  {                                                                          \
    ScopedBf16Kernels probe(true);                                           \
    if (!bf16_kernels_enabled(DeviceKind::cpu))                              \
      GTEST_SKIP() << "no bfloat16 kernels on this CPU (they need AVX-512)"; \
  }

}  // namespace

// The float32 path rounds its results with the same vector code as the kernels, so the rounding
// itself is checked here against backend/half.h's scalar conversions, inputs made the same way:
// subnormal results included, which VCVTNEPS2BF16 alone would flush to zero.
TEST(Bf16ElementwiseKernels, BinaryOpsRoundAsTheScalarCode) {
  REQUIRE_BF16_KERNELS();
  ScopedBf16Kernels on(true);
  const Shape shape{3, 1001};
  // The specials, every fifth value scaled down to 1e-19 times itself (products below 2^-126).
  auto bits_of = [&](uint32_t seed) {
    const std::vector<float> v = special_bf16(shape, seed).astype(DType::float32).to_vector<float>();
    std::vector<uint16_t> out;
    for (size_t i = 0; i < v.size(); ++i) out.push_back(float_to_bfloat16(i % 5 == 1 ? v[i] * 1e-19f : v[i]));
    return out;
  };
  const std::vector<uint16_t> a_bits = bits_of(7), b_bits = bits_of(8);
  auto tensor_of = [&](const std::vector<uint16_t>& b) {
    Tensor t = Tensor::empty(shape, DType::bfloat16);
    std::copy(b.begin(), b.end(), static_cast<uint16_t*>(t.raw_data()));
    return t;
  };
  const Tensor a = tensor_of(a_bits), b = tensor_of(b_bits);
  const std::vector<std::pair<const char*, Tensor>> results = {
      {"add", ops::add(a, b)}, {"subtract", ops::subtract(a, b)}, {"multiply", ops::multiply(a, b)}};
  int subnormal = 0;
  for (const auto& [name, got] : results) {
    const std::vector<uint16_t> have = bits(got);
    int bad = 0;
    for (size_t i = 0; i < have.size(); ++i) {
      const float x = bfloat16_to_float(a_bits[i]), y = bfloat16_to_float(b_bits[i]);
      const float r = name[0] == 'a' ? x + y : name[0] == 's' ? x - y : x * y;
      const uint16_t want = float_to_bfloat16(r);
      subnormal += (want & 0x7f80) == 0 && (want & 0x7f) != 0;
      if (have[i] != want && ++bad <= 3)
        ADD_FAILURE() << name << " [" << i << "]: " << std::hex << have[i] << " vs " << want;
    }
    EXPECT_EQ(bad, 0) << name;
  }
  EXPECT_GT(subnormal, 10) << "no subnormal results to round";
}

TEST(Bf16ElementwiseKernels, AddSubtractMultiplyReluAndReluGradGiveTheFloat32PathsBits) {
  REQUIRE_BF16_KERNELS();
  // Odd sizes: spans split over threads with tails; 70,000 elements run threaded.
  for (const Shape shape : {Shape{7, 13}, Shape{70, 1000}}) {
    const Tensor a = special_bf16(shape, 1), b = special_bf16(shape, 2), g = random_bf16(shape, 5);
    uint64_t runs = 0, conversions = 0;
    auto [native, float32] = both_paths(
        [&] {
          return TensorList{ops::add(a, b), ops::subtract(a, b), ops::multiply(a, b), ops::relu(a),
                            run_op("relu_grad", {g, a})[0]};
        },
        &runs, &conversions);
    EXPECT_EQ(runs, 5u);
    EXPECT_EQ(conversions, 0u);
    const char* names[] = {"add", "subtract", "multiply", "relu"};
    for (size_t i = 0; i < 4; ++i) expect_same_bits(native[i], float32[i], names[i]);
    // relu_grad where y is NaN: 0, as TensorFlow's ReluGrad (y > 0 is false) and the plain
    // loops; oneDNN's float32 kernel passes the gradient there.
    const auto y = a.astype(DType::float32).to_vector<float>();
    const auto ours = native[4].astype(DType::float32).to_vector<float>();
    const auto theirs = float32[4].astype(DType::float32).to_vector<float>();
    for (size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(y[i])) ASSERT_EQ(ours[i], 0.f) << i;
      else ASSERT_EQ(ours[i], theirs[i]) << "relu_grad " << i;
    }
  }
  // A NaN or infinite gradient where y <= 0 gives 0, as TensorFlow's ReluGrad and the plain loops
  // (oneDNN's float32 kernel multiplies by the mask and gives NaN there).
  {
    ScopedBf16Kernels on(true);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor g = Tensor::from_vector(std::vector<float>{nan, inf, -inf, nan}).astype(DType::bfloat16);
    const Tensor y = Tensor::from_vector(std::vector<float>{0.f, -1.f, -0.f, 2.f}).astype(DType::bfloat16);
    const auto d = run_op("relu_grad", {g, y})[0].astype(DType::float32).to_vector<float>();
    EXPECT_EQ(d[0], 0.f);
    EXPECT_EQ(d[1], 0.f);
    EXPECT_EQ(d[2], 0.f);
    EXPECT_TRUE(std::isnan(d[3]));
  }
  // Broadcasting takes the float32 path inside the kernel: the same values.
  const Tensor a = special_bf16({6, 5}, 3), row = special_bf16({5}, 4);
  auto [native, float32] = both_paths([&] { return TensorList{ops::add(a, row), ops::multiply(row, a)}; });
  expect_same_bits(native[0], float32[0], "add broadcast");
  expect_same_bits(native[1], float32[1], "multiply broadcast");
}

TEST(Bf16ElementwiseKernels, BatchNormOpsOnBfloat16ActivationsMatchTheFloat32Path) {
  REQUIRE_BF16_KERNELS();
  // (rows, channels): rows over several blocks and threads, channels with a vector tail.
  const Tensor x = random_bf16({2 * 600, 19}, 10, 2.f, 3.f), grad = random_bf16({2 * 600, 19}, 11);
  const Tensor gamma = random_bf16({19}, 12, 1.f, 4.f).astype(DType::float32);  // some outputs above 6
  const Tensor beta = random_bf16({19}, 13).astype(DType::float32);
  uint64_t runs = 0, conversions = 0;
  auto [native, float32] = both_paths(
      [&] {
        TensorList mv = run_op("batch_moments", {x});
        const Attrs eps{{"epsilon", 1e-3}};
        Attrs relu6 = eps;
        relu6.set("activation", std::string("relu6"));
        TensorList out = {mv[0], mv[1], run_op("batch_norm_train", {x, gamma, beta, mv[0], mv[1]}, eps)[0],
                          run_op("batch_norm_relu_train", {x, gamma, beta, mv[0], mv[1]}, relu6)[0],
                          run_op("batch_norm_inference", {x, mv[0], mv[1], gamma, beta}, eps)[0]};
        for (const Tensor& t : run_op("batch_norm_train_grad", {grad, x, gamma, mv[0], mv[1]}, eps)) out.push_back(t);
        for (const Tensor& t : run_op("batch_norm_relu_train_grad", {grad, x, gamma, beta, mv[0], mv[1]}, relu6))
          out.push_back(t);
        return out;
      },
      &runs, &conversions);
  EXPECT_EQ(runs, 6u);
  EXPECT_EQ(conversions, 0u);
  const char* names[] = {"mean", "variance", "batch_norm_train", "batch_norm_relu_train (relu6)",
                         "batch_norm_inference", "dx", "dgamma", "dbeta", "relu dx", "relu dgamma", "relu dbeta"};
  ASSERT_EQ(native.size(), 11u);
  for (size_t i = 0; i < native.size(); ++i) {
    EXPECT_EQ(native[i].dtype(), i < 2 || i == 6 || i == 7 || i >= 9 ? DType::float32 : DType::bfloat16) << names[i];
    expect_within_a_step(native[i], float32[i], names[i]);
  }
  // The relu6 window clamps: some outputs at 0, some at 6.
  const auto y = native[3].astype(DType::float32).to_vector<float>();
  EXPECT_GT(std::count(y.begin(), y.end(), 0.f), 0);
  EXPECT_GT(std::count(y.begin(), y.end(), 6.f), 0);
  // Statistics and weights of two dtypes are refused, naming them.
  const Tensor mean16 = random_bf16({19}, 14), var = ops::add(ops::square(gamma), 0.5);
  EXPECT_THROW(run_op("batch_norm_train", {x, gamma, beta, mean16, var}, Attrs{{"epsilon", 1e-3}}), TypeError);
  EXPECT_THROW(run_op("batch_norm_inference", {x, mean16, var, gamma, beta}, Attrs{{"epsilon", 1e-3}}), TypeError);
}

TEST(Bf16ElementwiseKernels, MixedBatchNormalizationNormalizesInOnePassLikeTheFloat32Layer) {
  // A training call of a mixed_bfloat16 BatchNormalization runs no casts of its activations, and
  // gives the float32 layer's output (on the same bfloat16 values) rounded, its weight gradients
  // and its moving statistics.
  REQUIRE_BF16_KERNELS();
  ScopedBf16Kernels on(true);
  const Tensor x = random_bf16({4, 6, 6, 8}, 20, 1.f, 0.5f);
  const Tensor weights = random_bf16({4, 6, 6, 8}, 21).astype(DType::float32);  // the loss's
  auto run = [&](const std::string& policy, std::map<std::string, uint64_t>* ops_run) {
    layers::BatchNormalization bn({.momentum = 0.5, .dtype = policy});
    Tensor xv = policy == "float32" ? x.astype(DType::float32) : x;
    xv = xv.clone().set_requires_grad(true);
    reset_op_profile();
    set_op_profiling(ops_run != nullptr);
    GradientTape tape;
    Tensor y = bn(TensorList{xv}, CallArgs{.training = true})[0];
    set_op_profiling(false);
    if (ops_run)
      for (const auto& e : op_profile()) (*ops_run)[e.op] += e.calls;
    Tensor loss = ops::sum(ops::multiply(ops::cast(y, DType::float32), weights));
    TensorList g = tape.gradient(loss, {xv, bn->weights()[0].value(), bn->weights()[1].value()});
    return TensorList{y, g[0], g[1], g[2], bn->weights()[2].value(), bn->weights()[3].value()};
  };
  std::map<std::string, uint64_t> ops_run;
  const TensorList mixed = run("mixed_bfloat16", &ops_run), full = run("float32", nullptr);
  EXPECT_EQ(ops_run["cast"] + ops_run["astype"], 0u) << "the activations were converted";
  EXPECT_EQ(ops_run["batch_norm_train"], 1u);
  ASSERT_EQ(mixed[0].dtype(), DType::bfloat16);
  expect_within_a_step(mixed[0], full[0].astype(DType::bfloat16), "y");
  ASSERT_EQ(mixed[1].dtype(), DType::bfloat16);
  // dx: the float32 layer's gradient rounded, up to a float32 accumulation allowance.
  const auto dm = mixed[1].astype(DType::float32).to_vector<float>(), df = full[1].to_vector<float>();
  float scale = 0;
  for (float v : df) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < dm.size(); ++i) ASSERT_NEAR(dm[i], df[i], std::ldexp(std::fabs(df[i]), -7) + 1e-4f * scale) << i;
  for (size_t i = 2; i < mixed.size(); ++i) {
    ASSERT_EQ(mixed[i].dtype(), DType::float32) << i;
    const auto a = mixed[i].to_vector<float>(), b = full[i].to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 0.02f * (1 + std::fabs(b[j]))) << i << " " << j;
  }
}

TEST(Bf16ElementwiseKernels, MaxPoolingAndTheFusedReluGradientGiveTheFloat32PathsValues) {
  REQUIRE_BF16_KERNELS();
  // Max pooling is exact in bfloat16 (a maximum is one of its inputs): the same values and
  // gradients with disjoint windows (the vector loops, 5 channels: one vector and a tail) and with
  // overlapping ones (the backward converts), NaNs included; under a tape and without one.
  const Tensor x = special_bf16({2, 9, 8, 5}, 30), g_relu = random_bf16({2, 9, 8, 5}, 31);
  // 37 channels: two 16-lane groups where AVX-512 is allowed, a 4-lane group, one alone.
  for (const Tensor& pooled : {x, special_bf16({2, 9, 8, 37}, 34)}) {
    for (const auto& [pool, stride, padding] :
         {std::tuple{ops::Size2{2, 2}, ops::Size2{2, 2}, std::string("valid")}, std::tuple{ops::Size2{3, 3}, ops::Size2{2, 2}, std::string("same")}}) {
      const Tensor w = random_bf16(ops::max_pool2d(pooled, pool, stride, padding).shape(), 32);  // the loss's
      uint64_t runs = 0, conversions = 0;
      auto [native, float32] = both_paths(
          [&] {
            Tensor xv = pooled.clone().set_requires_grad(true);
            GradientTape tape;
            Tensor y = ops::max_pool2d(xv, pool, stride, padding);
            Tensor loss = ops::sum(ops::cast(ops::multiply(y, w), DType::float32));
            return TensorList{y, tape.gradient(loss, {xv})[0], ops::max_pool2d(pooled, pool, stride, padding)};
          },
          &runs, &conversions);
      EXPECT_GE(runs, 3u);
      if (padding == "valid") EXPECT_EQ(conversions, 0u) << "disjoint windows run in bfloat16";
      expect_same_bits(native[0], float32[0], "max_pool2d " + padding);
      expect_same_bits(native[1], float32[1], "max_pool2d_grad " + padding);
      expect_same_bits(native[2], float32[2], "max_pool2d (no tape) " + padding);
    }
  }
  // dense_activation_grad (the gradient of a convolution's fused activation): relu in bfloat16,
  // the others through float32.
  for (const std::string act : {"relu", "sigmoid"}) {
    const Tensor y = act == "relu" ? x : random_bf16(x.shape(), 33, 0.5f, 0.5f);
    auto [native, float32] = both_paths(
        [&] { return run_op("dense_activation_grad", {g_relu, y}, Attrs{{"activation", act}}); });
    expect_same_bits(native[0], float32[0], "dense_activation_grad " + act);
  }
}
