// The AVX-512 weight gradient (backend/cpu/conv_backward_weights_avx512.h) against the plain-loop
// reference and the AVX2 kernel: every channel block of 1 to 8, 16 to 64 outputs, rows of 1 to
// 33 pixels (the three-pixel steps and both row ends), "same", "valid" and explicit pads, kernel
// heights 1 to 5, vertical dilation, with and without the bias, batches split into chunks; the
// bits for any thread count; taps that do not exist never multiply an infinity by zero; NaN in dy.
#include <gtest/gtest.h>

#include <cmath>
#include <array>
#include <cstring>
#include <optional>
#include <tuple>

#include "backend/cpu/conv_backward_weights_avx512.h"
#include "backend/cpu/conv_backward_weights_direct.h"
#include "backend/cpu/conv_direct_avx512.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/reference_conv.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/random.h"
#include "backend/threads.h"

using namespace keras;

namespace {

struct Case {
  Shape x;       // N, H, W, C
  Shape kernel;  // kh, 3, C, O
  std::string padding = "same";
  int64_t dilation_h = 1;
  std::optional<std::array<int64_t, 4>> pads = std::nullopt;  // top, bottom, left, right: instead of `padding`
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t w : {1, 2, 3, 4, 5, 7, 8, 13, 32, 33})
    for (int64_t c : {1, 3, 8, 13, 16})
      for (int64_t o : {16, 48}) out.push_back({{2, 4, w, c}, {3, 3, c, o}});
  for (int64_t w : {3, 4, 6, 11}) out.push_back({{2, 5, w, 9}, {3, 3, 9, 32}, "valid"});
  out.push_back({{3, 6, 9, 32}, {1, 3, 32, 64}});
  out.push_back({{2, 7, 8, 64}, {5, 3, 64, 16}, "same"});
  out.push_back({{2, 9, 6, 24}, {3, 3, 24, 32}, "same", 2});
  out.push_back({{64, 8, 8, 16}, {3, 3, 16, 16}});  // enough data for 16 chunks
  out.push_back({{5, 1, 4, 16}, {3, 3, 16, 16}});   // one row per image: most taps in the padding
  out.push_back({{2, 5, 7, 2}, {3, 3, 2, 16}});     // two-channel tiles
  for (int64_t kh : {2, 4}) out.push_back({{2, 6, 7, 16}, {kh, 3, 16, 16}});  // uneven "same" rows
  out.push_back({{2, 2, 6, 16}, {3, 3, 16, 16}, "same", 3});                  // dilated rows past the image
  // Left pads of 2, 3 and 5 (the left end then spans more than the two edge pixels), a top pad
  // beyond the kernel's reach.
  for (int64_t left : {2, 3, 5})
    out.push_back({{2, 4, 6, 16}, {3, 3, 16, 16}, "", 1, std::array<int64_t, 4>{1, 1, left, 0}});
  out.push_back({{2, 4, 6, 16}, {3, 3, 16, 16}, "", 1, std::array<int64_t, 4>{4, 0, 0, 3}});
  return out;
}

ConvParams params_of(const Case& c) {
  ConvParams p;
  p.dilation_h = c.dilation_h;
  if (c.pads) {
    std::tie(p.pad_top, p.pad_bottom, p.pad_left, p.pad_right) =
        std::tuple((*c.pads)[0], (*c.pads)[1], (*c.pads)[2], (*c.pads)[3]);
  } else {
    std::tie(p.pad_top, p.pad_bottom) = ops::conv_pads(c.x[1], c.kernel[0], c.padding, 1, c.dilation_h);
    std::tie(p.pad_left, p.pad_right) = ops::conv_pads(c.x[2], c.kernel[1], c.padding, 1, 1);
  }
  return p;
}

bool has_avx512() { return cpu::isa_allows_avx512(); }

struct Gradients {
  Tensor dk, db;
};

Gradients direct_gradients(const Tensor& x, const Tensor& dy, const Shape& ks, const ConvParams& p, bool bias = true) {
  Gradients g{Tensor::full(ks, 7.f, DType::float32), Tensor::full({ks[3]}, 7.f, DType::float32)};
  cpu::conv2d_backward_weights_direct(x.data<float>(), x.shape(), dy.data<float>(), dy.shape(), g.dk.data<float>(), ks,
                                      bias ? g.db.data<float>() : nullptr, p);
  return g;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return element_as_double(ops::max(ops::abs(ops::subtract(a.astype(DType::float64), b.astype(DType::float64)))), 0);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.data<float>(), b.data<float>(), sizeof(float) * static_cast<size_t>(a.numel())) == 0;
}

}  // namespace

TEST(ConvBackwardWeightsAvx512, AppliesToStrideOneUngroupedThreeWideKernelsAndWholeOutputVectors) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  ConvParams p;
  EXPECT_TRUE(cpu::avx512::conv_backward_weights_supports({3, 3, 16, 16}, p));
  EXPECT_TRUE(cpu::avx512::conv_backward_weights_supports({5, 3, 3, 64}, p));
  EXPECT_FALSE(cpu::avx512::conv_backward_weights_supports({3, 5, 16, 16}, p));   // 5 wide
  EXPECT_FALSE(cpu::avx512::conv_backward_weights_supports({3, 3, 16, 24}, p));   // a partial vector
  EXPECT_FALSE(cpu::avx512::conv_backward_weights_supports({3, 3, 128, 64}, p));  // wide layers: oneDNN's
  ConvParams strided = p;
  strided.stride_w = 2;
  EXPECT_FALSE(cpu::avx512::conv_backward_weights_supports({3, 3, 16, 16}, strided));
  ConvParams dilated = p;
  dilated.dilation_w = 2;
  EXPECT_FALSE(cpu::avx512::conv_backward_weights_supports({3, 3, 16, 16}, dilated));
  ConvParams grouped = p;
  grouped.groups = 2;
  EXPECT_FALSE(cpu::avx512::conv_backward_weights_supports({3, 3, 8, 32}, grouped));
  cpu::avx512::set_conv_direct_enabled(false);
  EXPECT_FALSE(cpu::avx512::conv_backward_weights_supports({3, 3, 16, 16}, p));
  cpu::avx512::set_conv_direct_enabled(true);
}

TEST(ConvBackwardWeightsAvx512, MatchesTheReferenceAndTheAvx2Kernel) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  uint64_t seed = 900;
  for (const Case& c : cases()) {
    ConvParams p = params_of(c);
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.kernel) + " pads " + p.str());
    ASSERT_TRUE(cpu::avx512::conv_backward_weights_supports(c.kernel, p));
    Tensor x = random::normal(c.x, 0, 1, seed++);
    Shape ys = cpu::reference_conv2d(x, Tensor::zeros(c.kernel), Tensor(), p).shape();
    Tensor dy = random::normal(ys, 0, 1, seed++);
    Gradients wide = direct_gradients(x, dy, c.kernel, p);
    cpu::avx512::set_conv_direct_enabled(false);
    Gradients narrow = direct_gradients(x, dy, c.kernel, p);
    cpu::avx512::set_conv_direct_enabled(true);
    Tensor ref = cpu::reference_conv2d_backward_weights(x, dy, c.kernel, p);
    Tensor ref_bias = ops::sum(dy, std::vector<int64_t>{0, 1, 2});
    const double scale = std::sqrt(static_cast<double>(shape_numel(ys)) / static_cast<double>(ys[3]));
    EXPECT_LT(max_abs_diff(wide.dk, ref), 1e-5 * scale * 10);
    EXPECT_LT(max_abs_diff(wide.dk, narrow.dk), 1e-5 * scale * 10);
    EXPECT_LT(max_abs_diff(wide.db, ref_bias), 1e-5 * scale * 10);
    EXPECT_TRUE(same_bits(direct_gradients(x, dy, c.kernel, p, false).dk, wide.dk));  // no bias: dk alike
    EXPECT_GT(max_abs_diff(ref, Tensor::zeros(c.kernel)), 0.1);
  }
}

TEST(ConvBackwardWeightsAvx512, SameBitsForAnyThreadCount) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const int saved = num_threads();
  // The batch summed in several chunks, and in one (the threads then share the tiles).
  for (const Case& c : {Case{{48, 6, 10, 24}, {3, 3, 24, 32}}, Case{{2, 3, 5, 64}, {3, 3, 64, 64}}}) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.kernel));
    ConvParams p = params_of(c);
    Tensor x = random::normal(c.x, 0, 1, 3);
    Tensor dy = random::normal({c.x[0], c.x[1], c.x[2], c.kernel[3]}, 0, 1, 4);
    set_num_threads(1);
    Gradients one = direct_gradients(x, dy, c.kernel, p);
    for (int threads : {2, 3, 5, 7}) {
      set_num_threads(threads);
      Gradients many = direct_gradients(x, dy, c.kernel, p);
      EXPECT_TRUE(same_bits(one.dk, many.dk)) << threads << " threads";
      EXPECT_TRUE(same_bits(one.db, many.db)) << threads << " threads";
    }
  }
  set_num_threads(saved);
}

TEST(ConvBackwardWeightsAvx512, TapsOutsideTheRowNeverMultiplyAnInfinity) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  // An infinite input at each row's last pixel: with "same" padding tap 0 never pairs it with a
  // dy pixel (that pixel would lie past the row), so dk's tap-0 column stays finite, as in the
  // reference; a kernel multiplying it by a zero would make it NaN.
  Case c{{2, 4, 9, 16}, {3, 3, 16, 16}};
  ConvParams p = params_of(c);
  Tensor x = random::normal(c.x, 0, 1, 5);
  float* px = x.data<float>();
  for (int64_t row = 0; row < 2 * 4; ++row) px[(row * 9 + 8) * 16 + 3] = INFINITY;
  Tensor dy = random::normal({2, 4, 9, 16}, 0, 1, 6);
  Gradients g = direct_gradients(x, dy, c.kernel, p);
  Tensor ref = cpu::reference_conv2d_backward_weights(x, dy, c.kernel, p);
  const float* dk = g.dk.data<float>();
  const float* rk = ref.data<float>();
  int64_t tap0_finite = 0, mismatched = 0;
  for (int64_t i = 0; i < g.dk.numel(); ++i) {
    const int64_t kw = (i / (16 * 16)) % 3;
    if (kw == 0) tap0_finite += std::isfinite(dk[i]);
    const bool both_nan = std::isnan(dk[i]) && std::isnan(rk[i]);
    mismatched += !both_nan && !(std::isinf(rk[i]) ? dk[i] == rk[i] : std::abs(dk[i] - rk[i]) < 1e-3);
  }
  EXPECT_EQ(tap0_finite, 3 * 16 * 16);
  EXPECT_EQ(mismatched, 0);
}

TEST(ConvBackwardWeightsAvx512, NanInDyReachesExactlyTheWeightsItTouches) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  Case c{{1, 4, 6, 8}, {3, 3, 8, 16}};
  ConvParams p = params_of(c);
  Tensor x = random::normal(c.x, 0, 1, 7);
  Tensor dy = random::normal({1, 4, 6, 16}, 0, 1, 8);
  dy.data<float>()[(0 * 6 + 0) * 16 + 5] = NAN;  // output pixel (0, 0), output channel 5
  Gradients g = direct_gradients(x, dy, c.kernel, p);
  Tensor ref = cpu::reference_conv2d_backward_weights(x, dy, c.kernel, p);
  int64_t nan_mismatch = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) nan_mismatch += std::isnan(g.dk.data<float>()[i]) != std::isnan(ref.data<float>()[i]);
  EXPECT_EQ(nan_mismatch, 0);
  EXPECT_TRUE(std::isnan(g.db.data<float>()[5]));
  EXPECT_FALSE(std::isnan(g.db.data<float>()[4]));
}
