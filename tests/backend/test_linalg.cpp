// matmul and dense: oneDNN float32 and plain-loop float64 kernels against the naive references,
// gradients in double, error messages, and the primitive cache staying warm across steps.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/reference_linalg.h"
#include "backend/cpu/weight_cache.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return 1e300;
  Tensor ac = a.contiguous(), bc = b.contiguous();
  double m = 0;
  for (int64_t i = 0; i < ac.numel(); ++i)
    m = std::max(m, std::abs(element_as_double(ac, i) - element_as_double(bc, i)));
  return m;
}

struct MatmulCase {
  Shape a_batch;
  Shape b_batch;
  int64_t m, k, n;
};

// Stored shape of a logical (batch, rows, cols) operand under a transpose flag.
Shape stored(const Shape& batch, int64_t rows, int64_t cols, bool transposed) {
  Shape s = batch;
  s.push_back(transposed ? cols : rows);
  s.push_back(transposed ? rows : cols);
  return s;
}

const std::vector<MatmulCase> kCases = {
    {{}, {}, 1, 1, 1},          {{}, {}, 3, 5, 7},          {{2}, {}, 3, 4, 5},     {{2}, {2}, 3, 4, 5},
    {{1}, {2}, 3, 4, 5},        {{}, {2}, 3, 4, 5},         {{2, 1}, {1, 3}, 2, 3, 4}, {{}, {}, 33, 65, 17},
};

}  // namespace

TEST(Matmul, Float32MatchesReferenceAllFlags) {
  uint64_t seed = 1;
  for (const auto& c : kCases)
    for (int flags = 0; flags < 4; ++flags) {
      bool ta = flags & 1, tb = flags & 2;
      Tensor a = random::normal(stored(c.a_batch, c.m, c.k, ta), 0, 1, seed++);
      Tensor b = random::normal(stored(c.b_batch, c.k, c.n, tb), 0, 1, seed++);
      Tensor got = ops::matmul(a, b, ta, tb);
      Tensor want = cpu::reference_matmul(a, b, ta, tb);
      EXPECT_LT(max_abs_diff(got, want), 1e-4 * std::sqrt(double(c.k)))
          << shape_str(a.shape()) << " @ " << shape_str(b.shape()) << " ta=" << ta << " tb=" << tb;
    }
}

TEST(Matmul, Float64PlainLoopMatchesReference) {
  uint64_t seed = 100;
  for (const auto& c : kCases)
    for (int flags = 0; flags < 4; ++flags) {
      bool ta = flags & 1, tb = flags & 2;
      Tensor a = random::normal(stored(c.a_batch, c.m, c.k, ta), 0, 1, seed++, DType::float64);
      Tensor b = random::normal(stored(c.b_batch, c.k, c.n, tb), 0, 1, seed++, DType::float64);
      Tensor got = ops::matmul(a, b, ta, tb);
      EXPECT_EQ(got.dtype(), DType::float64);
      EXPECT_LT(max_abs_diff(got, cpu::reference_matmul(a, b, ta, tb)), 1e-12)
          << shape_str(a.shape()) << " @ " << shape_str(b.shape()) << " ta=" << ta << " tb=" << tb;
    }
}

TEST(Matmul, ShapeErrorsNameOpAndShapes) {
  try {
    ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, 5)"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({5, 3}), false, true));
  EXPECT_THROW(ops::matmul(Tensor::zeros({3}), Tensor::zeros({3, 2})), ShapeError);
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 4})), ShapeError);
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 4}, DType::float64)), TypeError);
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 3}, DType::int32), Tensor::zeros({3, 4}, DType::int32)), TypeError);
  EXPECT_EQ(infer_op("matmul", {{{-1, 5, 3}, DType::float32}, {{3, 4}, DType::float32}})[0].shape, (Shape{-1, 5, 4}));
}

TEST(Matmul, GradientsFloat64AllFlags) {
  struct G { Shape ab, bb; };
  for (G c : {G{{}, {}}, G{{2}, {}}, G{{1}, {2}}, G{{}, {2}}}) {
    for (int flags = 0; flags < 4; ++flags) {
      bool ta = flags & 1, tb = flags & 2;
      Tensor a = random::normal(stored(c.ab, 3, 4, ta), 0, 1, uint64_t(10 + flags), DType::float64);
      Tensor b = random::normal(stored(c.bb, 4, 2, tb), 0, 1, uint64_t(20 + flags), DType::float64);
      keras::testing::check_gradients("matmul ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " " +
                                   shape_str(a.shape()) + "@" + shape_str(b.shape()),
                               [&](const TensorList& in) { return ops::matmul(in[0], in[1], ta, tb); }, {a, b});
    }
  }
}

TEST(Matmul, GradientFloat32OneDnn) {
  Tensor a = random::normal({3, 4}, 0, 1, uint64_t{5});
  Tensor b = random::normal({2, 4}, 0, 1, uint64_t{6});
  keras::testing::check_gradients("matmul f32", [](const TensorList& in) { return ops::matmul(in[0], in[1], false, true); },
                           {a, b});
}

TEST(Dense, MatchesReference) {
  for (DType dt : {DType::float32, DType::float64}) {
    double tol = dt == DType::float32 ? 2e-5 : 1e-12;
    for (const std::string act : {"linear", "relu", "sigmoid", "tanh", "elu", "gelu", "swish"}) {
      for (bool with_bias : {false, true}) {
        for (const Shape& xs : {Shape{5, 7}, Shape{2, 3, 7}, Shape{7}}) {
          Tensor x = random::normal(xs, 0, 1, uint64_t{1}, dt);
          Tensor w = random::normal({7, 4}, 0, 0.5, uint64_t{2}, dt);
          Tensor b = with_bias ? random::normal({4}, 0, 1, uint64_t{3}, dt) : Tensor();
          Tensor got = ops::dense(x, w, b, act);
          EXPECT_LT(max_abs_diff(got, cpu::reference_dense(x, w, b, act)), tol)
              << act << " bias=" << with_bias << " x=" << shape_str(xs) << " " << dtype_name(dt);
        }
      }
    }
  }
}

TEST(Dense, LargeBatchFloat32) {
  Tensor x = random::normal({37, 70}, 0, 1, uint64_t{4});
  Tensor w = random::normal({70, 33}, 0, 0.2, uint64_t{5});
  Tensor b = random::normal({33}, 0, 1, uint64_t{6});
  EXPECT_LT(max_abs_diff(ops::dense(x, w, b, "relu"), cpu::reference_dense(x, w, b, "relu")), 1e-4);
}

TEST(Dense, ShapeErrors) {
  EXPECT_THROW(ops::dense(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}), Tensor()), ShapeError);
  EXPECT_THROW(ops::dense(Tensor::zeros({2, 3}), Tensor::zeros({3, 5}), Tensor::zeros({4})), ShapeError);
  EXPECT_THROW(ops::dense(Tensor::zeros({2, 3}), Tensor::zeros({3}), Tensor()), ShapeError);
  try {
    ops::dense(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}), Tensor());
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("dense"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, 5)"), std::string::npos) << msg;
  }
}

TEST(Dense, GradientsFloat64) {
  for (const std::string act : {"linear", "relu", "sigmoid", "tanh", "elu"}) {
    for (bool with_bias : {true, false}) {
      Tensor x = random::normal({2, 3, 5}, 0, 1, uint64_t{7}, DType::float64);
      Tensor w = random::normal({5, 4}, 0, 1, uint64_t{8}, DType::float64);
      TensorList in{x, w};
      if (with_bias) in.push_back(random::normal({4}, 0, 1, uint64_t{9}, DType::float64));
      keras::testing::check_gradients("dense " + act + (with_bias ? " bias" : ""),
                               [&](const TensorList& t) {
                                 return ops::dense(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), act);
                               },
                               in);
    }
  }
}

TEST(Dense, GradientFloat32FusedRelu) {
  Tensor x = random::normal({4, 5}, 0, 1, uint64_t{11});
  Tensor w = random::normal({5, 3}, 0, 1, uint64_t{12});
  Tensor b = random::normal({3}, 0, 1, uint64_t{13});
  keras::testing::check_gradients("dense relu f32", [](const TensorList& t) { return ops::dense(t[0], t[1], t[2], "relu"); },
                           {x, w, b});
}

TEST(Dense, SecondStepCreatesNoPrimitive) {
  Tensor x = random::normal({8, 6}, 0, 1, uint64_t{14});
  Tensor w = random::normal({6, 5}, 0, 1, uint64_t{15}).set_requires_grad(true);
  Tensor b = random::normal({5}, 0, 1, uint64_t{16}).set_requires_grad(true);
  Tensor w2 = random::normal({5, 3}, 0, 1, uint64_t{17}).set_requires_grad(true);
  auto step = [&] {
    GradientTape tape;
    Tensor h = ops::dense(x, w, b, "relu");
    Tensor y = ops::matmul(h, w2, false, false);
    Tensor z = ops::matmul(y, w2, false, true);  // transposed weights
    return tape.gradient(ops::sum(z), {w, b, w2});
  };
  TensorList g1 = step();
  uint64_t misses = cpu_primitive_cache_stats().misses;
  TensorList g2 = step();
  EXPECT_EQ(cpu_primitive_cache_stats().misses, misses);
  for (size_t i = 0; i < g1.size(); ++i) {
    ASSERT_TRUE(g1[i].defined() && g2[i].defined());
    EXPECT_EQ(g1[i].to_vector<float>(), g2[i].to_vector<float>());
  }
}

// Activations oneDNN cannot fuse (or whose derivative needs the pre-activation) run after the
// product through ops::activation; the result must not depend on which path was taken.
TEST(Dense, UnfusedActivationsMatch) {
  Tensor x = random::normal({4, 6}, 0, 1, uint64_t{18}, DType::float64);
  Tensor w = random::normal({6, 3}, 0, 1, uint64_t{19}, DType::float64);
  Tensor b = random::normal({3}, 0, 1, uint64_t{20}, DType::float64);
  Tensor soft = ops::dense(x, w, b, "softmax");
  EXPECT_LT(max_abs_diff(soft, ops::softmax(ops::dense(x, w, b))), 1e-12);
  keras::testing::check_gradients("dense gelu (unfused under a tape)",
                                  [](const TensorList& t) { return ops::dense(t[0], t[1], t[2], "gelu"); }, {x, w, b});
  Tensor xs = x.clone().set_requires_grad(true);
  GradientTape tape;
  EXPECT_LT(max_abs_diff(ops::dense(xs, w, b, "swish"), cpu::reference_dense(x, w, b, "swish")), 1e-12);
}

// oneDNN's Dense kernels unchanged between calls (inference) run on a blocked copy of the weights,
// made once; weights written on every call (training) are never reordered. Either way the values
// are the plain layout's. (The project's panel kernels, which would take these calls, are off
// here: tests/backend/test_dense_panels.cpp checks theirs.)
TEST(Dense, UnchangedWeightsRunBlockedAndWritesAreSeen) {
  cpu::set_conv_direct(false);
  Tensor x = random::normal({128, 300}, 0, 1, uint64_t{21});
  Tensor w = random::normal({300, 200}, 0, 0.1, uint64_t{22});
  Tensor b = random::normal({200}, 0, 1, uint64_t{23});
  Tensor want = cpu::reference_dense(x, w, b, "relu");
  NoGradGuard no_grad;
  auto reorders = [] { return cpu::weight_cache_stats().reorders; };
  const uint64_t r0 = reorders();
  EXPECT_LT(max_abs_diff(ops::dense(x, w, b, "relu"), want), 1e-4);
  EXPECT_EQ(reorders(), r0) << "the first call cannot know the weights stay";
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(ops::dense(x, w, b, "relu"), want), 1e-4);
  // brgemm (AVX-512) takes blocked weights; other ISAs may take the plain layout as it is.
  const bool avx512_core = cpu::isa_allows_avx512();
  if (avx512_core) EXPECT_EQ(reorders(), r0 + 1);
  else EXPECT_LE(reorders(), r0 + 1);

  // A write through the versioned API is seen at once, and the blocked copy follows later.
  w.copy_from(ops::multiply(w, 2.0));
  Tensor want2 = cpu::reference_dense(x, w, b, "relu");
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(ops::dense(x, w, b, "relu"), want2), 2e-4) << "call " << i;

  // Training: the weights change on every step, so no step reorders them.
  const uint64_t r1 = reorders();
  for (int i = 0; i < 3; ++i) {
    w.copy_from(ops::multiply(w, 0.5));
    EXPECT_LT(max_abs_diff(ops::dense(x, w, b, "relu"), cpu::reference_dense(x, w, b, "relu")), 1e-4);
  }
  EXPECT_EQ(reorders(), r1);
  cpu::set_conv_direct(true);
}
