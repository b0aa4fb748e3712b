// The vectorised float32 max-pooling loops and the float32 batch-norm moments and backward against
// the plain-loop references: ties, NaN and -inf, channel counts that leave lanes over, disjoint
// windows with and without full cover, overlapping ones, parallel sizes with partial blocks; and
// the training step running the moments once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/autodiff.h"
#include "backend/cpu/norm_reference.h"
#include "backend/cpu/pool_reference.h"
#include "backend/op_profile.h"
#include "backend/ops_nn.h"
#include "backend/random.h"
#include "backend/threads.h"

using namespace keras;

namespace {

struct Case {
  Shape x;
  int64_t ph, pw, sh, sw;
  std::string padding;
};

std::string label(const Case& c) {
  return shape_str(c.x) + " pool (" + std::to_string(c.ph) + "," + std::to_string(c.pw) + ") strides (" +
         std::to_string(c.sh) + "," + std::to_string(c.sw) + ") " + c.padding;
}

cpu::PoolParams params(const Case& c) {
  return cpu::pool_params(c.x, Attrs{{"pool_size", std::vector<int64_t>{c.ph, c.pw}},
                                     {"strides", std::vector<int64_t>{c.sh, c.sw}},
                                     {"padding", c.padding}});
}

// Small integers (many ties inside a window), with a few NaNs and -infs sprinkled in.
Tensor tied_input(const Shape& s, uint64_t seed) {
  std::vector<float> v = random::normal(s, 0, 1.2, seed).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::round(v[i]);
    if (i % 37 == 5) v[i] = std::nanf("");
    if (i % 41 == 7) v[i] = -INFINITY;
  }
  return Tensor::from_vector(v, s);
}

// Bit-for-bit equality (NaNs included).
void expect_same_bits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
}

}  // namespace

TEST(FastMaxPool, MatchesReferenceWithTiesAndNaNs) {
  const std::vector<Case> cases = {
      {{2, 8, 8, 4}, 2, 2, 2, 2, "valid"},    // disjoint, exactly covered
      {{2, 7, 9, 13}, 2, 2, 2, 2, "valid"},   // last row and column in no window; 13 = 3 lanes + 1
      {{3, 7, 7, 8}, 3, 3, 3, 3, "same"},     // disjoint, padded on both sides
      {{1, 5, 5, 3}, 2, 2, 2, 2, "same"},     // fewer channels than one lane group
      {{1, 9, 7, 6}, 2, 1, 3, 2, "valid"},    // gaps between windows (stride > pool)
      {{2, 7, 9, 5}, 3, 3, 2, 2, "valid"},    // overlapping: the scatter backward
      {{1, 6, 5, 17}, 2, 3, 1, 2, "same"},    // overlapping along h only
      {{2, 4, 4, 9}, 4, 4, 4, 4, "valid"},    // one window covering everything
      {{1, 7, 7, 37}, 3, 3, 2, 2, "same"},    // 37 = 2 x 16 + 4 + 1, overlapping
      {{2, 5, 6, 64}, 2, 2, 2, 2, "same"},    // the channels of a real convnet, padded
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(label(c));
    Tensor x = tied_input(c.x, 3);
    cpu::PoolParams p = params(c);
    Shape out{p.n, p.oh, p.ow, p.c};
    // Outputs as the leading batches of buffers one batch longer: that last batch must stay as filled.
    Shape guarded{p.n + 1, p.oh, p.ow, p.c};
    Tensor y_buf = Tensor::full(guarded, 4242.0), idx_buf = Tensor::full(guarded, 4242.0, DType::int32);
    Tensor yi_buf = Tensor::full(guarded, 4242.0);
    Tensor y = y_buf.slice_batch(0, p.n), idx = idx_buf.slice_batch(0, p.n), yi = yi_buf.slice_batch(0, p.n);
    ASSERT_EQ(y.data<float>(), y_buf.data<float>()) << "slice_batch must be a view for the guard to mean anything";
    Tensor yr = Tensor::empty(out), idxr = Tensor::empty(out, DType::int32);
    cpu::max_pool2d_forward(x, y, idx, p);
    cpu::max_pool2d_forward_reference(x, yr, idxr, p);
    expect_same_bits(y.contiguous(), yr);
    EXPECT_EQ(idx.to_vector<int32_t>(), idxr.to_vector<int32_t>());
    cpu::max_pool2d_forward_inference(x, yi, p);
    expect_same_bits(yi.contiguous(), yr);
    const int64_t per_batch = p.oh * p.ow * p.c;
    for (const Tensor& buf : {y_buf, idx_buf, yi_buf}) {
      const std::vector<double> tail = buf.astype(DType::float64).to_vector<double>();
      for (size_t i = static_cast<size_t>(p.n * per_batch); i < tail.size(); ++i)
        ASSERT_EQ(tail[i], 4242.0) << "written past the output at " << i;
    }

    // dx is filled with garbage first: every element must be written.
    Tensor g = random::normal(out, 0, 1, uint64_t{4});
    Tensor dx = Tensor::full(c.x, 12345.0), dxr = Tensor::empty(c.x);
    cpu::max_pool2d_backward(g, idx, dx, p);
    cpu::max_pool2d_backward_reference(g, idxr, dxr, p);
    expect_same_bits(dx, dxr);
    if (cpu::max_pool2d_windows_disjoint(p)) {
      Tensor dxf = Tensor::full(c.x, -7.0);
      cpu::max_pool2d_backward_f32(g, idx, dxf, p);
      expect_same_bits(dxf, dxr);
    } else {
      EXPECT_THROW(cpu::max_pool2d_backward_f32(g, idx, dx, p), ValueError);
    }
  }
}

// The registered ops on a taped float32 input: values and the gradient equal the reference's.
TEST(FastMaxPool, TapedOpMatchesReference) {
  Tensor x = tied_input({2, 9, 7, 10}, 5);
  for (auto [pool, strides] : {std::pair<ops::Size2, ops::Size2>{{2, 2}, {2, 2}}, {{3, 3}, {2, 2}}}) {
    Tensor w = x.clone().set_requires_grad(true);
    GradientTape tape;
    Tensor y = ops::max_pool2d(w, pool, strides, "same");
    Tensor g = random::normal(y.shape(), 0, 1, uint64_t{6});
    Tensor dx = tape.gradient(ops::sum(ops::multiply(y, g)), {w})[0];

    cpu::PoolParams p = cpu::pool_params(x.shape(), Attrs{{"pool_size", std::vector<int64_t>{pool[0], pool[1]}},
                                                          {"strides", std::vector<int64_t>{strides[0], strides[1]}},
                                                          {"padding", std::string("same")}});
    Tensor yr = Tensor::empty(y.shape()), idxr = Tensor::empty(y.shape(), DType::int32), dxr = Tensor::empty(x.shape());
    cpu::max_pool2d_forward_reference(x, yr, idxr, p);
    cpu::max_pool2d_backward_reference(g, idxr, dxr, p);
    expect_same_bits(y.contiguous(), yr);
    expect_same_bits(dx.contiguous(), dxr);
  }
}

// ---------------- batch moments ----------------

TEST(FastMoments, MatchReferenceInDouble) {
  // Parallel sizes with partial blocks, one channel, a large mean over a small spread.
  struct M {
    Shape s;
    double mean, stddev;
  };
  for (const M& m : std::vector<M>{{{9, 31, 37, 5}, 0.5, 2}, {{300, 1}, -3, 1}, {{7, 130, 3}, 1000, 0.5},
                                   {{1, 1}, 4, 1}, {{4, 33, 33, 64}, 0, 1e-3}}) {
    SCOPED_TRACE(shape_str(m.s));
    const int64_t C = m.s.back();
    Tensor x = random::normal(m.s, m.mean, m.stddev, uint64_t{21});
    // The same float values in double, for the two-pass double reference.
    std::vector<float> xv = x.to_vector<float>();
    Tensor x64 = Tensor::from_vector(std::vector<double>(xv.begin(), xv.end()), m.s);
    Tensor mean = Tensor::empty({C}), var = Tensor::empty({C});
    Tensor mr = Tensor::empty({C}, DType::float64), vr = Tensor::empty({C}, DType::float64);
    cpu::batch_moments(x, mean, var);
    cpu::batch_moments(x64, mr, vr);
    auto a = mean.to_vector<float>(), b = var.to_vector<float>();
    auto ar = mr.to_vector<double>(), br = vr.to_vector<double>();
    for (int64_t c = 0; c < C; ++c) {
      EXPECT_NEAR(a[c], ar[c], 1e-6 * std::max(1.0, std::abs(ar[c])) + 1e-6 * m.stddev) << c;
      EXPECT_NEAR(b[c], br[c], 1e-4 * br[c] + 1e-7) << c;
    }
  }
}

// The per-thread partial sums are added in thread order, not as threads finish: with more threads
// than cores (finishing order varies most) every run gives the same bits, statistics and
// gradients, float32 and float64.
TEST(FastMoments, SameBitsOnEveryRunWithMoreThreadsThanCores) {
  const int threads = num_threads();
  set_num_threads(5);
  for (DType dtype : {DType::float32, DType::float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = random::normal({64, 16, 16, 24}, 0.3, 2, uint64_t{31}, dtype);
    Tensor g = random::normal({64, 16, 16, 24}, 0, 1, uint64_t{32}, dtype);
    Tensor gamma = random::normal({24}, 1, 0.2, uint64_t{33}, dtype);
    TensorList first;
    for (int run = 0; run < 12; ++run) {
      Tensor mean = Tensor::empty({24}, dtype), var = Tensor::empty({24}, dtype);
      cpu::batch_moments(x, mean, var);
      Tensor dx = Tensor::empty(x.shape(), dtype), dgamma = Tensor::empty({24}, dtype), dbeta = Tensor::empty({24}, dtype);
      cpu::batch_norm_backward(g, x, gamma, mean, var, 1e-3, dx, dgamma, dbeta);
      TensorList now{mean, var, dx, dgamma, dbeta};
      if (run == 0) first = now;
      for (size_t i = 0; i < now.size(); ++i) expect_same_bits(now[i], first[i]);
    }
  }
  set_num_threads(threads);
}

// The float32 backward (block sums, folded factors) against the double reference on the same
// values, at sizes that run in parallel with partial blocks.
TEST(FastMoments, BackwardMatchesReferenceInDouble) {
  for (const Shape& s : std::vector<Shape>{{9, 31, 37, 5}, {4, 33, 33, 64}, {300, 3}}) {
    SCOPED_TRACE(shape_str(s));
    const int64_t C = s.back();
    auto to64 = [](const Tensor& t) {
      std::vector<float> v = t.to_vector<float>();
      return Tensor::from_vector(std::vector<double>(v.begin(), v.end()), t.shape());
    };
    Tensor x = random::normal(s, 0.3, 1.5, uint64_t{31}), g = random::normal(s, 0, 1, uint64_t{32});
    Tensor gamma = random::normal({C}, 1, 0.3, uint64_t{33});
    Tensor mean = Tensor::empty({C}), var = Tensor::empty({C});
    cpu::batch_moments(x, mean, var);
    Tensor dx = Tensor::empty(s), dg = Tensor::empty({C}), db = Tensor::empty({C});
    cpu::batch_norm_backward(g, x, gamma, mean, var, 1e-3, dx, dg, db);
    Tensor dxr = Tensor::empty(s, DType::float64), dgr = Tensor::empty({C}, DType::float64);
    Tensor dbr = Tensor::empty({C}, DType::float64);
    cpu::batch_norm_backward_reference(to64(g), to64(x), to64(gamma), to64(mean), to64(var), 1e-3, dxr, dgr, dbr);
    const double m = static_cast<double>(x.numel() / C);
    auto a = dx.to_vector<float>();
    auto ar = dxr.to_vector<double>();
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - ar[i]));
    EXPECT_LT(worst, 1e-4);
    auto b = dg.to_vector<float>(), c = db.to_vector<float>();
    auto br = dgr.to_vector<double>(), cr = dbr.to_vector<double>();
    for (int64_t k = 0; k < C; ++k) {
      EXPECT_NEAR(b[k], br[k], 1e-5 * std::sqrt(m) + 1e-5 * std::abs(br[k])) << k;
      EXPECT_NEAR(c[k], cr[k], 1e-5 * std::sqrt(m) + 1e-5 * std::abs(cr[k])) << k;
    }
  }
}

// The training step computes the moments once: the backward reuses the forward's.
TEST(FastMoments, TrainingStepRunsMomentsOnce) {
  Tensor x = random::normal({4, 5, 5, 3}, 0, 1, uint64_t{22}).set_requires_grad(true);
  Tensor gamma = Tensor::ones({3}).set_requires_grad(true), beta = Tensor::zeros({3}).set_requires_grad(true);
  reset_op_profile();
  set_op_profiling(true);
  {
    GradientTape tape;
    auto r = ops::batch_norm_training(x, gamma, beta, 1e-3);
    tape.gradient(ops::sum(ops::square(r.y)), {x, gamma, beta});
  }
  set_op_profiling(false);
  uint64_t moments = 0, grads = 0;
  for (const auto& e : op_profile()) {
    if (e.op == "batch_moments") moments += e.calls;
    if (e.op == "batch_norm_train_grad") grads += e.calls;
  }
  EXPECT_EQ(moments, 1u);
  EXPECT_EQ(grads, 1u);
}
