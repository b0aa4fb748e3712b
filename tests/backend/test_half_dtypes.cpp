// bfloat16 and float16 tensors: exact conversions (round to nearest even, NaN, infinities,
// subnormals), the native memory ops (astype, fill, copy, views, item), and every other op run in
// float32 by run_op with its outputs rounded back, gradients included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/autodiff.h"
#include "backend/cpu/bf16_convert.h"
#include "backend/half.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/random.h"

using namespace keras;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even by exhaustive comparison: the two bfloat16 neighbours of f, the nearer
// one, the one with an even last bit on a tie.
uint16_t bfloat16_reference(float f) {
  const uint32_t u = bits_of(f);
  const uint16_t lo = static_cast<uint16_t>(u >> 16), hi = static_cast<uint16_t>(lo + 1);
  const double dlo = std::fabs(static_cast<double>(f) - bfloat16_to_float(lo));
  const double dhi = std::fabs(static_cast<double>(bfloat16_to_float(hi)) - f);
  if ((u & 0xffffu) == 0) return lo;
  if ((u & 0x7fffffffu) >= 0x7f7f8000u && (u & 0x7fffffffu) < 0x7f800000u) {
    // Past the largest bfloat16's rounding midpoint: infinity, as IEEE rounding gives.
    return (u & 0xffffu) >= 0x8000u || (u & 0x7fffffffu) > 0x7f7f8000u ? hi : lo;
  }
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1u) ? hi : lo;
}

std::vector<float> as_floats(const Tensor& t) { return t.astype(DType::float32).to_vector<float>(); }

// The float32 values of `v` rounded to dtype `t`.
std::vector<float> rounded(const std::vector<float>& v, DType t) {
  std::vector<float> out;
  for (float f : v) out.push_back(half_to_float(t, half_from_float(t, f)));
  return out;
}

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 3.f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

class HalfDTypes : public ::testing::TestWithParam<DType> {};

}  // namespace

TEST(HalfConversions, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f808000u)), 0x3f80);  // tie: to the even 1.0
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f818000u)), 0x3f82);  // tie: to the even neighbour above
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f808001u)), 0x3f81);  // just past the tie: up
  EXPECT_EQ(float_to_bfloat16(-2.f), 0xc000);
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    const float f = float_of(any(gen));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), bfloat16_reference(f)) << std::hex << bits_of(f);
  }
}

TEST(HalfConversions, BFloat16KeepsSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(inf)), inf);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(-inf)), -inf);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low bits must not round into infinity.
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(float_of(0x7f800001u)))));
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the largest: inf
  EXPECT_EQ(float_to_bfloat16(-0.f), 0x8000);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(HalfConversions, VectorisedBFloat16ConversionsAgreeWithTheScalarOnes) {
  // Every high half with the low halves around the rounding ties (and NaN payloads), through the
  // array conversions and through astype (large enough to be split over threads).
  std::vector<float> f;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) f.push_back(float_of(hi << 16 | lo));
  const auto n = static_cast<int64_t>(f.size());
  std::vector<uint16_t> b(f.size());
  cpu::floats_to_bf16(f.data(), b.data(), n);
  std::vector<float> back(f.size());
  cpu::bf16_to_floats(b.data(), back.data(), n);
  for (size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(b[i], float_to_bfloat16(f[i])) << std::hex << bits_of(f[i]);
    ASSERT_EQ(bits_of(back[i]), bits_of(bfloat16_to_float(b[i])));
  }
  const Tensor t = Tensor::from_vector(f, {n});
  const Tensor h = t.astype(DType::bfloat16);
  const auto* hb = static_cast<const uint16_t*>(h.raw_data());
  for (size_t i = 0; i < f.size(); ++i) ASSERT_EQ(hb[i], b[i]) << i;
  const std::vector<float> round_trip = h.astype(DType::float32).to_vector<float>();
  for (size_t i = 0; i < f.size(); ++i) ASSERT_EQ(bits_of(round_trip[i]), bits_of(back[i])) << i;
}

TEST(HalfConversions, Float16RangeAndSubnormals) {
  EXPECT_EQ(float_to_float16(1.f), 0x3c00);
  EXPECT_EQ(float_to_float16(65504.f), 0x7bff);                   // the largest float16
  EXPECT_EQ(float_to_float16(65520.f), 0x7c00);                   // halfway past it: infinity
  EXPECT_EQ(float_to_float16(std::ldexp(1.f, -24)), 0x0001);      // the smallest subnormal
  EXPECT_EQ(float_to_float16(std::ldexp(1.f, -26)), 0x0000);      // below half of it: zero
  EXPECT_EQ(float_to_float16(1.f + std::ldexp(1.f, -11)), 0x3c00);  // tie: to the even 1.0
  EXPECT_EQ(float16_to_float(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(float16_to_float(float_to_float16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t b = 0; b < 0x10000u; ++b) {  // every finite float16 survives float32 and back
    const float f = float16_to_float(static_cast<uint16_t>(b));
    if (!std::isnan(f)) ASSERT_EQ(float_to_float16(f), b) << b;
  }
}

TEST_P(HalfDTypes, AstypeRoundsAndConvertsEveryDType) {
  const DType t = GetParam();
  const std::vector<float> v{0.f, 1.f, -2.5f, 1.f / 3.f, 300.7f, -1e-3f};
  Tensor h = Tensor::from_vector<float>(v, {2, 3}).astype(t);
  EXPECT_EQ(h.dtype(), t);
  EXPECT_EQ(h.nbytes(), 12u);
  EXPECT_EQ(as_floats(h), rounded(v, t));
  auto d = h.astype(DType::float64).to_vector<double>();
  auto i = h.astype(DType::int32).to_vector<int32_t>();
  for (size_t k = 0; k < v.size(); ++k) {
    EXPECT_EQ(d[k], static_cast<double>(rounded(v, t)[k]));
    EXPECT_EQ(i[k], static_cast<int32_t>(rounded(v, t)[k]));
  }
  const DType other = t == DType::bfloat16 ? DType::float16 : DType::bfloat16;
  EXPECT_EQ(as_floats(h.astype(other)), rounded(rounded(v, t), other));
  EXPECT_EQ(Tensor::from_vector<int64_t>({3, -7}, {2}).astype(t).astype(DType::int64).to_vector<int64_t>(),
            (std::vector<int64_t>{3, -7}));
}

TEST_P(HalfDTypes, FillItemCopyAndViewsWorkOnTheBits) {
  const DType t = GetParam();
  Tensor z = Tensor::full({3, 4}, 0.1, t);
  EXPECT_EQ(z.dtype(), t);
  EXPECT_EQ(as_floats(z)[5], rounded({0.1f}, t)[0]);
  EXPECT_EQ(static_cast<float>(Tensor::full({}, 0.1, t).item()), rounded({0.1f}, t)[0]);
  Tensor x = Tensor::from_vector<float>(random_values(12, 3), {3, 4}).astype(t);
  Tensor xt = ops::transpose(x, {1, 0});
  EXPECT_EQ(xt.dtype(), t);
  auto a = as_floats(x), b = as_floats(xt.contiguous());
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(b[c * 3 + r], a[r * 4 + c]);
  EXPECT_EQ(as_floats(ops::reshape(x, {12})), a);
  EXPECT_EQ(Tensor::arange(0, 5, 1, t).dtype(), t);
}

TEST_P(HalfDTypes, OtherOpsComputeInFloat32AndRoundTheirOutputs) {
  const DType t = GetParam();
  auto va = random_values(64, 1), vb = random_values(64, 2);
  Tensor a = Tensor::from_vector<float>(va, {8, 8}).astype(t), b = Tensor::from_vector<float>(vb, {8, 8}).astype(t);
  Tensor a32 = a.astype(DType::float32), b32 = b.astype(DType::float32);
  for (auto [got, want] : {std::pair{ops::add(a, b), ops::add(a32, b32)}, std::pair{ops::matmul(a, b), ops::matmul(a32, b32)},
                           std::pair{ops::exp(ops::multiply(a, 0.1)), ops::exp(ops::multiply(a, 0.1).astype(DType::float32))},
                           std::pair{ops::softmax(a, -1), ops::softmax(a32, -1)}}) {
    EXPECT_EQ(got.dtype(), t);
    EXPECT_EQ(as_floats(got), rounded(want.to_vector<float>(), t));
  }
  // A convolution with a fused relu, and a reduction.
  Tensor x = Tensor::from_vector<float>(random_values(2 * 5 * 5 * 3, 4), {2, 5, 5, 3}).astype(t);
  Tensor k = Tensor::from_vector<float>(random_values(3 * 3 * 3 * 4, 5, 0.3f), {3, 3, 3, 4}).astype(t);
  Tensor y = ops::conv2d(x, k, {}, {.activation = "relu"});
  EXPECT_EQ(y.dtype(), t);
  Tensor y32 = ops::conv2d(x.astype(DType::float32), k.astype(DType::float32), {}, {.activation = "relu"});
  EXPECT_EQ(as_floats(y), rounded(y32.to_vector<float>(), t));
  EXPECT_EQ(ops::sum(x).dtype(), t);
  EXPECT_EQ(ops::greater(a, b).dtype(), DType::boolean);
}

TEST_P(HalfDTypes, GradientsFlowThroughCastsToFloat32Leaves) {
  const DType t = GetParam();
  auto vw = random_values(12, 6, 1.f);
  Tensor w = Tensor::from_vector<float>(vw, {4, 3});
  w.set_requires_grad(true);
  Tensor x = Tensor::from_vector<float>(random_values(8, 7, 1.f), {2, 4}).astype(t);
  GradientTape tape;
  Tensor y = ops::matmul(x, ops::cast(w, t));  // the mixed-precision pattern: float32 weight read in t
  ASSERT_EQ(y.dtype(), t);
  Tensor loss = ops::sum(ops::cast(ops::multiply(y, y), DType::float32));
  Tensor g = tape.gradient(loss, {w})[0];
  ASSERT_EQ(g.dtype(), DType::float32);
  // d/dw sum((x w)^2) = 2 x^T (x w); the half-precision chain rounds on the way.
  Tensor x32 = x.astype(DType::float32), w16 = w.detach().astype(t).astype(DType::float32);
  auto want = ops::multiply(ops::matmul(x32, ops::matmul(x32, w16), true, false), 2.0).to_vector<float>();
  auto got = g.to_vector<float>();
  const double tol = t == DType::bfloat16 ? 3e-2 : 4e-3;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << i;
}

TEST_P(HalfDTypes, InPlaceOpsRefuseThem) {
  const DType t = GetParam();
  Tensor v = Tensor::zeros({4}, t);
  Tensor g = Tensor::ones({4}, t);
  // An optimizer update on a two-byte variable would write a float32 copy: refused, v unchanged.
  if (OpRegistry::instance().contains("sgd_update")) {
    EXPECT_THROW(run_op("sgd_update", {v, g}, {{"learning_rate", 0.1}}), TypeError);
    EXPECT_EQ(as_floats(v), std::vector<float>(4, 0.f));
  }
  EXPECT_THROW(v.data<float>(), TypeError);
  EXPECT_EQ(v.to_vector<float>(), std::vector<float>(4, 0.f));  // to_vector converts
  v.fill_(2.5);  // fill and copy_from are native
  EXPECT_EQ(as_floats(v), std::vector<float>(4, 2.5f));
  v.copy_from(g);
  EXPECT_EQ(as_floats(v), std::vector<float>(4, 1.f));
}

INSTANTIATE_TEST_SUITE_P(Both, HalfDTypes, ::testing::Values(DType::bfloat16, DType::float16),
                         [](const auto& info) { return dtype_name(info.param); });
