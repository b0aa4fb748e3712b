// The AVX512-BF16 weight gradient (backend/cpu/conv_backward_weights_bf16.h) against the float64
// plain-loop reference on the same bfloat16 values: input channels 1 to 64 (every channel-block
// tail), 16 to 64 outputs, output rows of 2 to 32 pixels, strides 1 and 2, left pads 0 to 2, top pads past the
// kernel, kernel heights 1 to 5, batches of 1 to 64 (fewer images than chunks, uneven chunks),
// with and without the bias gradient; where it applies; the same bits for any thread count; and
// the op choosing between it and oneDNN's, forced either way, within the same tolerance.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <tuple>

#include "backend/bf16_compute.h"
#include "backend/cpu/conv_backward_weights_bf16.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/reference_conv.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/random.h"
#include "backend/threads.h"

using namespace keras;

namespace {

struct Case {
  Shape x;                       // N, H, W, C
  Shape kernel;                  // kh, 3, C, O
  std::array<int64_t, 4> pads;   // top, bottom, left, right
  std::array<int64_t, 2> strides = {1, 1};
};

ConvParams params_of(const Case& c) {
  ConvParams p;
  std::tie(p.pad_top, p.pad_bottom, p.pad_left, p.pad_right) = std::tuple(c.pads[0], c.pads[1], c.pads[2], c.pads[3]);
  std::tie(p.stride_h, p.stride_w) = std::tuple(c.strides[0], c.strides[1]);
  return p;
}

Shape dy_shape(const Case& c) {
  const int64_t oh = (c.x[1] + c.pads[0] + c.pads[1] - c.kernel[0]) / c.strides[0] + 1;
  const int64_t ow = (c.x[2] + c.pads[2] + c.pads[3] - 3) / c.strides[1] + 1;
  return {c.x[0], oh, ow, c.kernel[3]};
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t w : {2, 4, 6, 8, 16, 32})
    for (int64_t c : {1, 3, 8, 13, 16, 64})
      for (int64_t o : {16, 32, 48, 64}) out.push_back({{3, 4, w, c}, {3, 3, c, o}, {1, 1, 1, 1}});
  for (int64_t c : {2, 4, 6, 7, 10})  // the remaining channel-block tails of 16 and 32 outputs
    for (int64_t o : {16, 32}) out.push_back({{2, 3, 4, c}, {3, 3, c, o}, {1, 1, 1, 1}});
  for (int64_t w : {4, 6, 10}) out.push_back({{2, 5, w, 9}, {3, 3, 9, 32}, {0, 0, 0, 0}});  // "valid"
  for (int64_t left : {0, 1, 2})                                                          // right: even rows
    out.push_back({{2, 4, 7, 16}, {3, 3, 16, 16}, {1, 1, left, 3 - left}});
  out.push_back({{2, 4, 6, 16}, {3, 3, 16, 16}, {4, 0, 1, 1}});  // a top pad beyond the kernel's reach
  for (int64_t kh : {1, 2, 4, 5}) out.push_back({{2, 6, 8, 16}, {kh, 3, 16, 32}, {kh / 2, (kh - 1) / 2, 1, 1}});
  out.push_back({{1, 8, 8, 64}, {3, 3, 64, 64}, {1, 1, 1, 1}});    // one image, one chunk
  out.push_back({{11, 8, 8, 32}, {3, 3, 32, 32}, {1, 1, 1, 1}});   // 8 uneven chunks
  out.push_back({{64, 8, 8, 64}, {3, 3, 64, 64}, {1, 1, 1, 1}});   // ResNet-20's last stage
  out.push_back({{64, 32, 32, 16}, {3, 3, 16, 16}, {1, 1, 1, 1}}); // and its first
  // Stride 2: ResNet's "same" downsampling (pads 0 before, 1 after), every left pad, widths odd
  // and even (at 10 with no pad, a last column no tap reads), a stride in one direction only,
  // uneven chunks.
  for (int64_t c : {1, 5, 16, 32})
    for (int64_t o : {16, 32, 64}) out.push_back({{3, 8, 8, c}, {3, 3, c, o}, {0, 1, 0, 1}, {2, 2}});
  for (int64_t left : {0, 1, 2})
    for (int64_t w : {7, 8, 9, 10, 12}) {
      const int64_t right = ((w + left - 3) / 2 + 1) % 2 ? 2 : 0;  // makes the output width even
      out.push_back({{2, 6, w, 8}, {3, 3, 8, 32}, {1, 0, left, right}, {2, 2}});
    }
  out.push_back({{2, 7, 8, 16}, {3, 3, 16, 16}, {1, 1, 1, 1}, {2, 1}});
  out.push_back({{2, 5, 12, 16}, {3, 3, 16, 48}, {1, 1, 1, 1}, {1, 2}});
  for (int64_t kh : {1, 2, 5}) out.push_back({{3, 9, 8, 24}, {kh, 3, 24, 32}, {kh / 2, kh / 2, 1, 1}, {2, 2}});
  out.push_back({{11, 16, 16, 32}, {3, 3, 32, 64}, {0, 1, 0, 1}, {2, 2}});  // ResNet-20's second
  out.push_back({{64, 32, 32, 16}, {3, 3, 16, 32}, {0, 1, 0, 1}, {2, 2}});  // and first downsampling
  return out;
}

// Normal values rounded to bfloat16, as bfloat16 tensors and as the float64 values they hold.
std::pair<Tensor, Tensor> bf16_normal(const Shape& shape, uint64_t seed) {
  Tensor b = random::normal(shape, 0, 1, seed).astype(DType::bfloat16);
  return {b, b.astype(DType::float64)};
}

struct Gradients {
  Tensor dk, db;  // db undefined without the bias
};

Gradients ours(const Tensor& x, const Tensor& dy, const Shape& ks, const ConvParams& p, bool bias = false) {
  Gradients g{Tensor::full(ks, 7.f, DType::float32).astype(DType::bfloat16),
              bias ? Tensor::full({ks[3]}, 7.f, DType::float32).astype(DType::bfloat16) : Tensor()};
  cpu::conv2d_backward_weights_bf16(static_cast<const uint16_t*>(x.raw_data()), x.shape(),
                                    static_cast<const uint16_t*>(dy.raw_data()), dy.shape(),
                                    static_cast<uint16_t*>(g.dk.raw_data()), ks,
                                    bias ? static_cast<uint16_t*>(g.db.raw_data()) : nullptr, p);
  return g;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// Largest |got - exact| / (2^-8 |exact| + 1e-5 sum |x| |dy|) over the elements: the rounding to
// bfloat16 of the result plus float32 accumulation. At most 1 passes.
double error_ratio(const Tensor& got, const Tensor& exact, const Tensor& magnitude) {
  Tensor diff = ops::abs(ops::subtract(got.astype(DType::float64), exact));
  Tensor bound = ops::add(ops::multiply(ops::abs(exact), Tensor::scalar(1.0 / 256, DType::float64)),
                          ops::multiply(magnitude, Tensor::scalar(1e-5, DType::float64)));
  return element_as_double(ops::max(ops::divide(diff, bound)), 0);
}

bool has_bf16() { return cpu::isa_allows_bf16(); }

}  // namespace

TEST(ConvBackwardWeightsBf16, AppliesToStrideOneOrTwoThreeWideKernelsEvenRowsAndWholeOutputVectors) {
  if (!has_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  ConvParams same;
  same.pad_top = same.pad_bottom = same.pad_left = same.pad_right = 1;
  const Shape x{2, 8, 8, 16}, dy{2, 8, 8, 32};
  EXPECT_TRUE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 16, 32}, dy, same));
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 16, 24}, {2, 8, 8, 24}, same));
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 16, 128}, {2, 8, 8, 128}, same));
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported({2, 7, 7, 16}, {3, 3, 16, 32}, {2, 7, 7, 32}, same))
      << "odd output rows";
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 5, 16, 32}, dy, same)) << "5 wide";
  ConvParams strided = same;
  strided.stride_h = strided.stride_w = 2;
  EXPECT_TRUE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 16, 32}, {2, 4, 4, 32}, strided));
  strided.stride_w = 3;
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 16, 32}, {2, 4, 2, 32}, strided)) << "stride 3";
  ConvParams dilated = same;
  dilated.dilation_w = 2;
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 16, 32}, {2, 8, 6, 32}, dilated));
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported({0, 8, 8, 16}, {3, 3, 16, 32}, {0, 8, 8, 32}, same))
      << "no image";
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 8, 32}, dy, same)) << "channels disagree";
  ConvParams wide_pad = same;
  wide_pad.pad_left = 3;
  wide_pad.pad_right = 0;
  EXPECT_FALSE(cpu::conv2d_backward_weights_bf16_supported(x, {3, 3, 16, 32}, dy, wide_pad));
}

TEST(ConvBackwardWeightsBf16, MatchesTheReferenceOnTheSameBfloat16Values) {
  if (!has_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.kernel) + " pads " + std::to_string(c.pads[0]) + "," +
                 std::to_string(c.pads[1]) + "," + std::to_string(c.pads[2]) + "," + std::to_string(c.pads[3]) +
                 " strides " + std::to_string(c.strides[0]) + "," + std::to_string(c.strides[1]));
    const ConvParams p = params_of(c);
    auto [x, x64] = bf16_normal(c.x, seed++);
    auto [dy, dy64] = bf16_normal(dy_shape(c), seed++);
    ASSERT_TRUE(cpu::conv2d_backward_weights_bf16_supported(x.shape(), c.kernel, dy.shape(), p));
    Tensor exact = cpu::reference_conv2d_backward_weights(x64, dy64, c.kernel, p);
    Tensor magnitude = cpu::reference_conv2d_backward_weights(ops::abs(x64), ops::abs(dy64), c.kernel, p);
    const bool bias = seed % 4 == 1;  // every other case
    Gradients g = ours(x, dy, c.kernel, p, bias);
    EXPECT_LE(error_ratio(g.dk.astype(DType::float32), exact, magnitude), 1.0);
    if (bias)
      EXPECT_LE(error_ratio(g.db.astype(DType::float32), ops::sum(dy64, {0, 1, 2}), ops::sum(ops::abs(dy64), {0, 1, 2})),
                1.0);
  }
}

TEST(ConvBackwardWeightsBf16, SameBitsForAnyThreadCount) {
  if (!has_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  const int saved = num_threads();
  for (const Case& c : {Case{{48, 6, 10, 24}, {3, 3, 24, 32}, {1, 1, 1, 1}},
                        Case{{3, 5, 6, 64}, {3, 3, 64, 64}, {1, 1, 1, 1}},
                        Case{{20, 8, 8, 16}, {3, 3, 16, 32}, {0, 1, 0, 1}, {2, 2}}}) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.kernel));
    const ConvParams p = params_of(c);
    Tensor x = bf16_normal(c.x, 3).first, dy = bf16_normal(dy_shape(c), 4).first;
    set_num_threads(1);
    Gradients one = ours(x, dy, c.kernel, p, true);
    for (int threads : {2, 3, 5, 8}) {
      set_num_threads(threads);
      Gradients many = ours(x, dy, c.kernel, p, true);
      EXPECT_TRUE(same_bits(one.dk, many.dk)) << threads << " threads";
      EXPECT_TRUE(same_bits(one.db, many.db)) << threads << " threads";
    }
  }
  set_num_threads(saved);
}

TEST(ConvBackwardWeightsBf16, TheOpGivesTheSameGradientWithEitherCandidate) {
  if (!has_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  ScopedBf16Kernels bf16(true);
  // ResNet-20's 3x3 layer at stride 1 and its downsampling one at stride 2.
  for (const Case& c : {Case{{4, 8, 8, 32}, {3, 3, 32, 16}, {1, 1, 1, 1}},
                        Case{{4, 8, 8, 16}, {3, 3, 16, 32}, {0, 1, 0, 1}, {2, 2}}}) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.kernel));
    const ConvParams p = params_of(c);
    auto [x, x64] = bf16_normal(c.x, 5);
    auto [dy, dy64] = bf16_normal(dy_shape(c), 6);
    Tensor exact = cpu::reference_conv2d_backward_weights(x64, dy64, c.kernel, p);
    Tensor magnitude = cpu::reference_conv2d_backward_weights(ops::abs(x64), ops::abs(dy64), c.kernel, p);
    Tensor exact_bias = ops::sum(dy64, {0, 1, 2}), bias_magnitude = ops::sum(ops::abs(dy64), {0, 1, 2});
    for (bool bias : {false, true})
      for (auto candidate : {cpu::ConvCandidate::direct, cpu::ConvCandidate::onednn_direct}) {
        SCOPED_TRACE(std::string(cpu::conv_candidate_name(candidate)) + (bias ? " with bias" : ""));
        cpu::force_conv_candidate(candidate);
        TensorList g = ops::conv2d_backward_weights(x, dy, c.kernel, p, bias);
        cpu::force_conv_candidate(std::nullopt);
        ASSERT_EQ(g[0].dtype(), DType::bfloat16);
        EXPECT_LE(error_ratio(g[0].astype(DType::float32), exact, magnitude), 1.0);
        if (bias) EXPECT_LE(error_ratio(g[1].astype(DType::float32), exact_bias, bias_magnitude), 1.0);
      }
    // Ours, forced, is what the op ran: the same bits as the kernel called directly.
    cpu::force_conv_candidate(cpu::ConvCandidate::direct);
    TensorList g = ops::conv2d_backward_weights(x, dy, c.kernel, p, true);
    cpu::force_conv_candidate(std::nullopt);
    Gradients direct = ours(x, dy, c.kernel, p, true);
    EXPECT_TRUE(same_bits(g[0], direct.dk));
    EXPECT_TRUE(same_bits(g[1], direct.db));
  }
}
