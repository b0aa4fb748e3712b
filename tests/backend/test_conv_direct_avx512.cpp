// The AVX-512 direct convolution (backend/cpu/conv_direct_avx512.h) against the plain-loop
// reference and the AVX2 kernel it replaces on AVX-512 CPUs: the tap-by-tap tiles give the AVX2
// kernel's bits (the same fused multiply-adds in the same order), the three-tap tiles (3-wide
// undilated kernels) sum in another order and stay within float32 rounding. Forward with and
// without bias and relu, the input gradient, every tile width from 1 pixel to a whole row, 1 to 4
// output vectors, padding, dilation, kernels wider than the image, thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <array>
#include <cstring>
#include <optional>
#include <tuple>
#include <functional>

#include "backend/cpu/conv_direct.h"
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
  Shape kernel;  // kh, kw, C, O
  std::string padding = "same";
  int64_t dilation_h = 1, dilation_w = 1;
  std::optional<std::array<int64_t, 4>> pads = std::nullopt;  // top, bottom, left, right: instead of `padding`
  int64_t stride = 1;                                          // both axes (the forward only)
};

std::vector<Case> cases() {
  std::vector<Case> out;
  // Every tile width of every vector count: rows of 1..33 pixels (16 channels in, 16..64 out).
  for (int64_t w = 1; w <= 33; ++w)
    for (int64_t o : {16, 32, 48, 64}) {
      out.push_back({{2, 3, w, 16}, {3, 3, 16, o}});  // three-tap tiles
      out.push_back({{1, 3, w, 16}, {2, 5, 16, o}});  // tap-by-tap tiles
    }
  out.push_back({{2, 9, 10, 32}, {3, 3, 32, 32}, "valid"});
  out.push_back({{1, 7, 8, 64}, {3, 3, 64, 16}});
  out.push_back({{3, 6, 5, 64}, {3, 3, 64, 64}, "same", 2, 2});
  out.push_back({{2, 5, 7, 16}, {1, 1, 16, 48}, "valid"});
  out.push_back({{2, 5, 7, 48}, {1, 1, 48, 16}, "valid"});  // the input gradient of 16 -> 48
  out.push_back({{1, 6, 9, 32}, {5, 5, 32, 16}});
  out.push_back({{2, 4, 6, 16}, {2, 4, 16, 32}});                   // even kernel, uneven "same" pads
  out.push_back({{1, 2, 3, 16}, {5, 5, 16, 16}});                   // kernel larger than the image
  out.push_back({{2, 8, 8, 32}, {3, 2, 32, 32}, "valid", 3, 3});    // dilation 3, two-wide kernel
  out.push_back({{2, 9, 7, 16}, {3, 3, 16, 32}, "same", 2, 1});     // three-tap tiles, 5 padded rows
  out.push_back({{2, 7, 9, 32}, {3, 3, 32, 16}, "same", 1, 2});     // dilated columns: tap by tap
  out.push_back({{2, 3, 3, 32}, {3, 3, 32, 16}, "valid"});          // a 1 x 1 output
  out.push_back({{1, 5, 6, 16}, {3, 3, 16, 16}, "", 1, 1, std::array<int64_t, 4>{0, 2, 2, 0}});
  out.push_back({{1, 5, 6, 16}, {3, 3, 16, 16}, "", 1, 1, std::array<int64_t, 4>{2, 0, 0, 2}});
  // Pads beyond the kernel's reach: the input gradient's top pad is then negative (rows skipped),
  // its left pad negative (left to the AVX2 kernel).
  out.push_back({{1, 5, 6, 16}, {3, 3, 16, 16}, "", 1, 1, std::array<int64_t, 4>{4, 0, 3, 1}});
  // Stride 2 (the forward): ResNet's downsampling ("same": pads 0 / 1), odd sizes, 1x1, "valid".
  for (int64_t w : {5, 7, 8, 16, 17, 32, 33, 49})
    out.push_back({{2, 9, w, 16}, {3, 3, 16, 32}, "same", 1, 1, std::nullopt, 2});
  out.push_back({{2, 8, 8, 32}, {3, 3, 32, 64}, "same", 1, 1, std::nullopt, 2});
  out.push_back({{2, 8, 9, 16}, {1, 1, 16, 32}, "valid", 1, 1, std::nullopt, 2});
  out.push_back({{1, 9, 11, 64}, {3, 3, 64, 16}, "valid", 1, 1, std::nullopt, 2});
  out.push_back({{2, 7, 10, 16}, {3, 3, 16, 48}, "", 1, 1, std::array<int64_t, 4>{1, 1, 1, 1}, 2});
  return out;
}

std::string name_of(const Case& c) {
  std::string pads = c.pads ? std::to_string((*c.pads)[0]) + "/" + std::to_string((*c.pads)[1]) + "/" +
                                  std::to_string((*c.pads)[2]) + "/" + std::to_string((*c.pads)[3])
                            : c.padding;
  return shape_str(c.x) + " * " + shape_str(c.kernel) + " pads " + pads + " dilation " + std::to_string(c.dilation_h) +
         "x" + std::to_string(c.dilation_w) + " stride " + std::to_string(c.stride);
}

ConvParams params_of(const Case& c) {
  ConvParams p;
  p.dilation_h = c.dilation_h, p.dilation_w = c.dilation_w;
  p.stride_h = p.stride_w = c.stride;
  if (c.pads) {
    std::tie(p.pad_top, p.pad_bottom, p.pad_left, p.pad_right) =
        std::tuple((*c.pads)[0], (*c.pads)[1], (*c.pads)[2], (*c.pads)[3]);
  } else {
    std::tie(p.pad_top, p.pad_bottom) = ops::conv_pads(c.x[1], c.kernel[0], c.padding, c.stride, c.dilation_h);
    std::tie(p.pad_left, p.pad_right) = ops::conv_pads(c.x[2], c.kernel[1], c.padding, c.stride, c.dilation_w);
  }
  return p;
}

Shape output_shape(const Case& c, const ConvParams& p) {
  auto extent = [&](int64_t in, int64_t k, int64_t d, int64_t lo, int64_t hi) {
    return (in + lo + hi - (k - 1) * d - 1) / c.stride + 1;
  };
  return {c.x[0], extent(c.x[1], c.kernel[0], c.dilation_h, p.pad_top, p.pad_bottom),
          extent(c.x[2], c.kernel[1], c.dilation_w, p.pad_left, p.pad_right), c.kernel[3]};
}

// Whether the AVX-512 kernel takes the forward problem, or the input gradient's (a convolution of
// dy with the flipped kernel: channels swapped, pads (k - 1) * dilation - pad).
bool avx512_runs(const Case& c, const ConvParams& p, bool input_gradient) {
  float zeros[64] = {};
  const Shape ys = output_shape(c, p);
  cpu::DirectConv g{nullptr,     c.x[0],       c.x[1],    c.x[2],    c.x[3], nullptr, c.kernel[0], c.kernel[1],
                    c.stride,    c.stride,     c.dilation_h, c.dilation_w, p.pad_top, p.pad_left, nullptr, false,
                    nullptr,     ys[1],        ys[2],     c.kernel[3], zeros};
  if (input_gradient) {
    g.ih = ys[1], g.iw = ys[2], g.ci = c.kernel[3], g.oh = c.x[1], g.ow = c.x[2], g.co = c.kernel[2];
    g.pt = (c.kernel[0] - 1) * c.dilation_h - p.pad_top, g.pl = (c.kernel[1] - 1) * c.dilation_w - p.pad_left;
  }
  return cpu::avx512::conv_direct_supports(g);
}

bool has_avx512() { return cpu::isa_allows_avx512(); }

bool three_tap(const Case& c) { return c.kernel[1] == 3 && c.dilation_w == 1 && c.stride == 1; }

// Runs `compute` with the AVX-512 kernel on, then with it off (the AVX2 kernel), and checks both
// give the same floats (three-tap tiles: within `tolerance`).
void expect_as_avx2(const std::function<Tensor()>& compute, bool exact, double tolerance) {
  Tensor wide = compute();
  cpu::avx512::set_conv_direct_enabled(false);
  Tensor narrow = compute();
  cpu::avx512::set_conv_direct_enabled(true);
  ASSERT_EQ(wide.numel(), narrow.numel());
  const float* a = wide.data<float>();
  const float* b = narrow.data<float>();
  int64_t differing = 0, beyond = 0;
  for (int64_t i = 0; i < wide.numel(); ++i) {
    differing += !(a[i] == b[i]);
    beyond += !(std::abs(a[i] - b[i]) <= tolerance);
  }
  if (exact) EXPECT_EQ(differing, 0);
  EXPECT_EQ(beyond, 0);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return element_as_double(ops::max(ops::abs(ops::subtract(a.astype(DType::float64), b.astype(DType::float64)))), 0);
}

}  // namespace

TEST(ConvDirectAvx512, AppliesToStridesOneAndTwoWholeVectorsOfSixteenToSixtyFourChannels) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  float zeros[64] = {};
  cpu::DirectConv g{nullptr, 1, 8, 8, 16, nullptr, 3, 3, 1, 1, 1, 1, 1, 1, nullptr, false, nullptr, 8, 8, 32, zeros};
  EXPECT_TRUE(cpu::avx512::conv_direct_supports(g));
  for (int64_t ci : {8, 24, 48, 128}) {
    cpu::DirectConv other = g;
    other.ci = ci;
    EXPECT_FALSE(cpu::avx512::conv_direct_supports(other)) << ci << " input channels";
  }
  for (int64_t co : {8, 24, 80}) {
    cpu::DirectConv other = g;
    other.co = co;
    EXPECT_FALSE(cpu::avx512::conv_direct_supports(other)) << co << " outputs";
  }
  cpu::DirectConv strided = g;
  strided.sh = strided.sw = 2;
  EXPECT_TRUE(cpu::avx512::conv_direct_supports(strided));
  strided.sw = 3;
  EXPECT_FALSE(cpu::avx512::conv_direct_supports(strided));
  cpu::avx512::set_conv_direct_enabled(false);
  EXPECT_FALSE(cpu::avx512::conv_direct_supports(g));
  cpu::avx512::set_conv_direct_enabled(true);
}

TEST(ConvDirectAvx512, ForwardMatchesTheAvx2KernelAndTheReference) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  uint64_t seed = 400;
  size_t ran = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(name_of(c));
    ConvParams p = params_of(c);
    ran += avx512_runs(c, p, false);
    Shape ys = output_shape(c, p);
    Tensor x = random::normal(c.x, 0, 1, seed++);
    Tensor k = random::normal(c.kernel, 0, 1, seed++);
    Tensor b = random::normal({c.kernel[3]}, 0, 1, seed++);
    for (bool bias : {false, true})
      for (const char* act : {"linear", "relu"}) {
        SCOPED_TRACE(std::string(act) + (bias ? " with bias" : ""));
        auto compute = [&] {
          Tensor y = Tensor::full(ys, 7.f, DType::float32);  // every element must be written
          cpu::conv2d_direct(x.data<float>(), c.x, k.data<float>(), c.kernel, bias ? b.data<float>() : nullptr,
                             y.data<float>(), ys, p, act);
          return y;
        };
        expect_as_avx2(compute, !three_tap(c), 1e-4);
        EXPECT_LT(max_abs_diff(compute(), cpu::reference_conv2d(x, k, bias ? b : Tensor(), p, act)), 1e-4);
      }
  }
  EXPECT_EQ(ran, cases().size() - 1);  // all but 48 -> 16 (48 input channels)
}

TEST(ConvDirectAvx512, InputGradientMatchesTheAvx2KernelAndTheReference) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  uint64_t seed = 700;
  size_t ran = 0, stride_one = 0;
  for (const Case& c : cases()) {
    if (c.stride != 1) continue;  // the direct input gradient is stride 1 only
    ++stride_one;
    // The input gradient is a convolution of dy (kernel[3] channels) into kernel[2] outputs.
    SCOPED_TRACE(name_of(c));
    ConvParams p = params_of(c);
    ran += avx512_runs(c, p, true);
    Shape ys = output_shape(c, p);
    Tensor k = random::normal(c.kernel, 0, 1, seed++);
    Tensor dy = random::normal(ys, 0, 1, seed++);
    auto compute = [&] {
      Tensor dx = Tensor::full(c.x, 7.f, DType::float32);
      cpu::conv2d_backward_data_direct(dy.data<float>(), ys, k.data<float>(), c.kernel, dx.data<float>(), c.x, p);
      return dx;
    };
    expect_as_avx2(compute, !three_tap(c), 1e-3);
    EXPECT_LT(max_abs_diff(compute(), cpu::reference_conv2d_backward_data(dy, k, c.x, p)), 1e-3);
  }
  // All but the 48-output ones (48 input channels) and the negative left pad.
  EXPECT_EQ(ran, stride_one - 33 * 2 - 2);
}

TEST(ConvDirectAvx512, SameBitsForAnyThreadCount) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const int saved = num_threads();
  // Three-tap and tap-by-tap forward, an input gradient, and fewer rows than threads.
  for (const Case& c : {Case{{3, 11, 14, 32}, {3, 3, 32, 48}}, Case{{3, 11, 14, 32}, {2, 5, 32, 16}},
                        Case{{3, 11, 14, 16}, {3, 3, 16, 64}}, Case{{1, 2, 5, 16}, {3, 3, 16, 16}}}) {
    SCOPED_TRACE(name_of(c));
    ConvParams p = params_of(c);
    Shape ys = output_shape(c, p);
    Tensor x = random::normal(c.x, 0, 1, 1);
    Tensor k = random::normal(c.kernel, 0, 1, 2);
    Tensor dy = random::normal(ys, 0, 1, 3);
    const bool input_gradient = c.kernel[3] == 64;
    ASSERT_TRUE(avx512_runs(c, p, input_gradient));
    auto compute = [&](int threads) {
      set_num_threads(threads);
      if (input_gradient) {
        Tensor dx = Tensor::empty(c.x, DType::float32);
        cpu::conv2d_backward_data_direct(dy.data<float>(), ys, k.data<float>(), c.kernel, dx.data<float>(), c.x, p);
        return dx;
      }
      Tensor y = Tensor::empty(ys, DType::float32);
      cpu::conv2d_direct(x.data<float>(), c.x, k.data<float>(), c.kernel, nullptr, y.data<float>(), ys, p, "relu");
      return y;
    };
    Tensor one = compute(1);
    for (int threads : {2, 3, 7}) {
      Tensor many = compute(threads);
      EXPECT_EQ(std::memcmp(one.data<float>(), many.data<float>(), sizeof(float) * static_cast<size_t>(one.numel())), 0)
          << threads << " threads";
    }
  }
  set_num_threads(saved);
}
