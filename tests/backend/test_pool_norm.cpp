// Pooling, normalization, resizing, padding and spatial dropout ops: oneDNN against the plain
// loops on odd shapes, known values, float64 gradient checks, errors, and a warm primitive cache.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backend/autodiff.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/norm_reference.h"
#include "backend/cpu/pool_reference.h"
#include "backend/ops_nn.h"
#include "backend/random.h"
#include "tests/support/gradcheck.h"

using namespace keras;
using keras::testing::check_gradients;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  double m = 0;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  for (int64_t i = 0; i < ca.numel(); ++i) m = std::max(m, std::abs(element_as_double(ca, i) - element_as_double(cb, i)));
  return m;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

struct PoolCase {
  Shape x;
  ops::Size2 pool, strides;
  std::string padding;
};

// Odd extents, stride 2 over odd sizes, even windows with same padding, 1x1, batch 1.
std::vector<PoolCase> pool_cases() {
  return {{{2, 7, 9, 3}, {3, 3}, {2, 2}, "valid"}, {{1, 5, 7, 4}, {2, 2}, {2, 2}, "same"},
          {{3, 6, 5, 17}, {2, 3}, {1, 2}, "same"}, {{1, 1, 1, 5}, {1, 1}, {1, 1}, "valid"},
          {{2, 4, 4, 2}, {4, 4}, {1, 1}, "valid"}, {{1, 9, 9, 8}, {3, 3}, {2, 2}, "same"},
          {{2, 5, 5, 3}, {1, 1}, {2, 2}, "valid"}};
}

std::string label(const PoolCase& c) {
  return shape_str(c.x) + " pool (" + std::to_string(c.pool[0]) + "," + std::to_string(c.pool[1]) + ") strides (" +
         std::to_string(c.strides[0]) + "," + std::to_string(c.strides[1]) + ") " + c.padding;
}

Attrs pool_attrs(const PoolCase& c) {
  return Attrs{{"pool_size", std::vector<int64_t>{c.pool[0], c.pool[1]}},
               {"strides", std::vector<int64_t>{c.strides[0], c.strides[1]}},
               {"padding", c.padding}};
}

}  // namespace

// ---------------- pooling ----------------

TEST(Pooling, GeometryMatchesKeras) {
  auto g = ops::pool2d_geometry(5, 7, {2, 2}, {2, 2}, "same", "test");
  EXPECT_EQ(g.out_h, 3);
  EXPECT_EQ(g.out_w, 4);
  EXPECT_EQ(g.pad_top, 0);  // the odd extra pad goes bottom/right
  EXPECT_EQ(g.pad_bottom, 1);
  EXPECT_EQ(g.pad_right, 1);
  auto v = ops::pool2d_geometry(7, 9, {3, 3}, {2, 2}, "valid", "test");
  EXPECT_EQ(v.out_h, 3);
  EXPECT_EQ(v.out_w, 4);
  auto s = ops::pool2d_geometry(6, 6, {3, 3}, {1, 1}, "same", "test");
  EXPECT_EQ(s.pad_top, 1);
  EXPECT_EQ(s.pad_bottom, 1);
}

TEST(Pooling, OneDnnMatchesReference) {
  for (const auto& c : pool_cases()) {
    SCOPED_TRACE(label(c));
    Tensor x = random::normal(c.x, 0, 1, uint64_t{11});
    cpu::PoolParams p = cpu::pool_params(c.x, pool_attrs(c));
    Shape out{p.n, p.oh, p.ow, p.c};
    Tensor g = random::normal(out, 0, 1, uint64_t{12});

    Tensor y = Tensor::empty(out), idx = Tensor::empty(out, DType::int32);
    Tensor yr = Tensor::empty(out), idxr = Tensor::empty(out, DType::int32);
    cpu::max_pool2d_forward(x, y, idx, p);
    cpu::max_pool2d_forward_reference(x, yr, idxr, p);
    EXPECT_EQ(max_abs_diff(y, yr), 0.0);
    EXPECT_EQ(idx.to_vector<int32_t>(), idxr.to_vector<int32_t>());
    Tensor yi = Tensor::empty(out);
    cpu::max_pool2d_forward_inference(x, yi, p);
    EXPECT_EQ(max_abs_diff(yi, yr), 0.0);
    Tensor dx = Tensor::empty(c.x), dxr = Tensor::empty(c.x);
    cpu::max_pool2d_backward(g, idx, dx, p);
    cpu::max_pool2d_backward_reference(g, idxr, dxr, p);
    EXPECT_LT(max_abs_diff(dx, dxr), 1e-6);

    cpu::avg_pool2d_forward(x, y, p);
    cpu::avg_pool2d_forward_reference(x, yr, p);
    EXPECT_LT(max_abs_diff(y, yr), 1e-5);
    cpu::avg_pool2d_backward(g, dx, p);
    cpu::avg_pool2d_backward_reference(g, dxr, p);
    EXPECT_LT(max_abs_diff(dx, dxr), 1e-5);
  }
}

TEST(Pooling, KnownValues) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  Tensor x = Tensor::from_vector(v, {1, 4, 4, 1});
  EXPECT_EQ(ops::max_pool2d(x, {2, 2}, {2, 2}).to_vector<float>(), (std::vector<float>{5, 7, 13, 15}));
  EXPECT_EQ(ops::avg_pool2d(x, {2, 2}, {2, 2}).to_vector<float>(), (std::vector<float>{2.5, 4.5, 10.5, 12.5}));
  // "same" average pooling divides by the positions inside the image only (Keras/TF).
  Tensor ones = Tensor::ones({1, 3, 3, 2});
  for (float y : ops::avg_pool2d(ones, {3, 3}, {1, 1}, "same").to_vector<float>()) EXPECT_FLOAT_EQ(y, 1.0f);
  Tensor y3 = ops::avg_pool2d(x, {2, 2}, {2, 2}, "same");
  EXPECT_EQ(shape_str(y3.shape()), "(1, 2, 2, 1)");
  // Negative inputs: padding never wins a max.
  Tensor neg = ops::negative(ops::add(x, 1.0));
  EXPECT_EQ(ops::max_pool2d(neg, {3, 3}, {2, 2}, "same").to_vector<float>(), (std::vector<float>{-1, -3, -9, -11}));
}

TEST(Pooling, GradientsInDouble) {
  for (const auto& c : pool_cases()) {
    if (shape_numel(c.x) > 200) continue;
    SCOPED_TRACE(label(c));
    Tensor x = random::normal(c.x, 0, 1, uint64_t{21}, DType::float64);
    check_gradients("max_pool2d " + label(c), [&](const TensorList& in) {
      return ops::max_pool2d(in[0], c.pool, c.strides, c.padding);
    }, {x});
    check_gradients("avg_pool2d " + label(c), [&](const TensorList& in) {
      return ops::avg_pool2d(in[0], c.pool, c.strides, c.padding);
    }, {x});
  }
  // float32 through oneDNN, with the step sweep.
  Tensor x32 = random::normal({1, 5, 5, 2}, 0, 1, uint64_t{22});
  check_gradients("max_pool2d f32", [](const TensorList& in) { return ops::max_pool2d(in[0], {2, 2}, {2, 2}, "same"); }, {x32});
  check_gradients("avg_pool2d f32", [](const TensorList& in) { return ops::avg_pool2d(in[0], {3, 3}, {2, 2}, "same"); }, {x32});
}

TEST(Pooling, SecondGradientOfAveragePooling) {
  Tensor g = random::normal({1, 2, 2, 1}, 0, 1, uint64_t{24}, DType::float64);
  check_gradients("avg_pool2d_grad", [](const TensorList& in) {
    return run_op("avg_pool2d_grad", {in[0]}, Attrs{{"pool_size", std::vector<int64_t>{2, 2}},
                                                    {"strides", std::vector<int64_t>{2, 2}},
                                                    {"padding", std::string("valid")},
                                                    {"input_shape", std::vector<int64_t>{1, 4, 4, 1}}})[0];
  }, {g});
}

TEST(Pooling, ErrorsNameShapes) {
  std::string m = message_of([] { ops::max_pool2d(Tensor::zeros({1, 2, 5, 3}), {3, 3}, {1, 1}); });
  EXPECT_NE(m.find("max_pool2d"), std::string::npos) << m;
  EXPECT_NE(m.find("(3, 3)"), std::string::npos) << m;
  EXPECT_NE(m.find("(2, 5)"), std::string::npos) << m;
  EXPECT_THROW(ops::max_pool2d(Tensor::zeros({1, 2, 5, 3}), {3, 3}, {1, 1}), ShapeError);
  EXPECT_THROW(ops::avg_pool2d(Tensor::zeros({2, 5, 3}), {2, 2}, {2, 2}), ShapeError);
  EXPECT_THROW(ops::avg_pool2d(Tensor::zeros({1, 4, 4, 1}), {0, 2}, {2, 2}), ValueError);
  EXPECT_THROW(ops::avg_pool2d(Tensor::zeros({1, 4, 4, 1}), {2, 2}, {2, 2}, "causal"), ValueError);
  EXPECT_THROW(ops::max_pool2d(Tensor::zeros({1, 4, 4, 1}, DType::int32), {2, 2}, {2, 2}), TypeError);
}

// ---------------- batch normalization ----------------

TEST(BatchNorm, OneDnnMatchesReference) {
  for (const Shape& shape : std::vector<Shape>{{2, 5, 3, 7}, {1, 3, 3, 4}, {6, 5}, {3, 4, 9}}) {
    SCOPED_TRACE(shape_str(shape));
    const int64_t C = shape.back();
    Tensor x = random::normal(shape, 0.5, 2, uint64_t{31});
    Tensor gamma = random::normal({C}, 1, 0.3, uint64_t{32}), beta = random::normal({C}, 0, 1, uint64_t{33});
    Tensor y = Tensor::empty(shape), yr = Tensor::empty(shape);
    Tensor m = Tensor::empty({C}), v = Tensor::empty({C}), mr = Tensor::empty({C}), vr = Tensor::empty({C});
    cpu::batch_norm_forward(x, gamma, beta, 1e-3, y, m, v);
    cpu::batch_norm_forward_reference(x, gamma, beta, 1e-3, yr, mr, vr);
    EXPECT_LT(max_abs_diff(y, yr), 1e-4);
    EXPECT_LT(max_abs_diff(m, mr), 1e-5);
    EXPECT_LT(max_abs_diff(v, vr), 1e-4);
    Tensor mm = Tensor::empty({C}), vm = Tensor::empty({C});
    cpu::batch_moments(x, mm, vm);
    EXPECT_LT(max_abs_diff(mm, mr), 1e-6);
    EXPECT_LT(max_abs_diff(vm, vr), 1e-5);
    Tensor g = random::normal(shape, 0, 1, uint64_t{34});
    Tensor dx = Tensor::empty(shape), dg = Tensor::empty({C}), db = Tensor::empty({C});
    Tensor dxr = Tensor::empty(shape), dgr = Tensor::empty({C}), dbr = Tensor::empty({C});
    cpu::batch_norm_backward(g, x, gamma, mr, vr, 1e-3, dx, dg, db);
    cpu::batch_norm_backward_reference(g, x, gamma, mr, vr, 1e-3, dxr, dgr, dbr);
    EXPECT_LT(max_abs_diff(dx, dxr), 1e-4);
    EXPECT_LT(max_abs_diff(dg, dgr), 1e-4);
    EXPECT_LT(max_abs_diff(db, dbr), 1e-4);
  }
}

TEST(BatchNorm, StatisticsAreBiasedMoments) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 10, 3, 20, 5, 60}, {3, 2});
  auto r = ops::batch_norm_training(x, Tensor(), Tensor(), 1e-3);
  auto m = r.mean.to_vector<float>(), v = r.variance.to_vector<float>();
  EXPECT_FLOAT_EQ(m[0], 3.0f);
  EXPECT_FLOAT_EQ(m[1], 30.0f);
  EXPECT_NEAR(v[0], 8.0 / 3.0, 1e-5);
  EXPECT_NEAR(v[1], 1400.0 / 3.0, 1e-3);
  auto y = r.y.to_vector<float>();
  EXPECT_NEAR(y[0], -2.0 / std::sqrt(8.0 / 3.0 + 1e-3), 1e-5);
}

TEST(BatchNorm, GradientsInDouble) {
  for (const Shape& shape : std::vector<Shape>{{2, 3, 2, 3}, {1, 2, 2, 2}, {5, 4}}) {
    SCOPED_TRACE(shape_str(shape));
    const int64_t C = shape.back();
    Tensor x = random::normal(shape, 0, 1, uint64_t{41}, DType::float64);
    Tensor gamma = random::normal({C}, 1, 0.3, uint64_t{42}, DType::float64);
    Tensor beta = random::normal({C}, 0, 1, uint64_t{43}, DType::float64);
    Tensor mean = random::normal({C}, 0, 1, uint64_t{44}, DType::float64);
    Tensor var = random::uniform({C}, 0.5, 2, uint64_t{45}, DType::float64);
    check_gradients("batch_norm_training", [](const TensorList& in) {
      return ops::batch_norm_training(in[0], in[1], in[2], 1e-3).y;
    }, {x, gamma, beta});
    check_gradients("batch_norm_inference", [](const TensorList& in) {
      return ops::batch_norm_inference(in[0], in[1], in[2], in[3], in[4], 1e-3);
    }, {x, mean, var, gamma, beta});
    check_gradients("layer_norm", [](const TensorList& in) { return ops::layer_norm(in[0], in[1], in[2], 1e-3); },
                    {x, gamma, beta});
  }
  Tensor x32 = random::normal({4, 3}, 0, 1, uint64_t{46});
  check_gradients("batch_norm_training f32", [](const TensorList& in) {
    return ops::batch_norm_training(in[0], in[1], in[2], 1e-3).y;
  }, {x32, Tensor::ones({3}), Tensor::zeros({3})});
}

TEST(BatchNorm, Errors) {
  EXPECT_THROW(ops::batch_norm_training(Tensor::zeros({2, 3}), Tensor::ones({4}), Tensor(), 1e-3), ShapeError);
  std::string m = message_of([] { ops::batch_norm_training(Tensor::zeros({2, 3}), Tensor::ones({4}), Tensor(), 1e-3); });
  EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
  EXPECT_THROW(ops::batch_norm_training(Tensor::zeros({2, 3}, DType::int64), Tensor(), Tensor(), 1e-3), TypeError);
}

TEST(LayerNorm, NormalizesEachRow) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 10, 10, 40}, {2, 3});
  auto y = ops::layer_norm(x, Tensor(), Tensor(), 0.0 + 1e-12).to_vector<float>();
  EXPECT_NEAR(y[0], -std::sqrt(1.5), 1e-4);
  EXPECT_NEAR(y[1], 0.0, 1e-5);
  EXPECT_NEAR(y[5], std::sqrt(2.0), 1e-4);
}

// ---------------- resizing, padding, spatial dropout ----------------

TEST(Resize, BilinearHalfPixelMatchesTensorFlow) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 2, 1});
  std::vector<float> want = {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4};
  auto got = ops::resize_bilinear2d(x, {4, 4}).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;
}

TEST(Resize, NearestRepeats) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 2, 1});
  EXPECT_EQ(ops::upsample_nearest2d(x, {2, 3}).to_vector<float>(),
            (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(Resize, PadCrop) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 2, 1});
  Tensor p = ops::zero_pad2d(x, {{{1, 0}, {0, 1}}});
  EXPECT_EQ(shape_str(p.shape()), "(1, 3, 3, 1)");
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 2, 0, 3, 4, 0}));
  EXPECT_EQ(ops::crop2d(p, {{{1, 0}, {0, 1}}}).to_vector<float>(), x.to_vector<float>());
  std::string m = message_of([&] { ops::crop2d(x, {{{1, 1}, {0, 0}}}); });
  EXPECT_NE(m.find("(1, 2, 2, 1)"), std::string::npos) << m;
  EXPECT_THROW(ops::zero_pad2d(x, {{{-1, 0}, {0, 0}}}), ValueError);
}

TEST(Resize, GradientsInDouble) {
  Tensor x = random::normal({2, 3, 2, 2}, 0, 1, uint64_t{51}, DType::float64);
  check_gradients("resize_bilinear up", [](const TensorList& in) { return ops::resize_bilinear2d(in[0], {5, 4}); }, {x});
  check_gradients("resize_bilinear down", [](const TensorList& in) { return ops::resize_bilinear2d(in[0], {2, 1}); }, {x});
  check_gradients("upsample_nearest2d", [](const TensorList& in) { return ops::upsample_nearest2d(in[0], {2, 3}); }, {x});
  check_gradients("zero_pad2d", [](const TensorList& in) { return ops::zero_pad2d(in[0], {{{1, 2}, {0, 1}}}); }, {x});
  check_gradients("crop2d", [](const TensorList& in) { return ops::crop2d(in[0], {{{1, 0}, {0, 1}}}); }, {x});
  check_gradients("spatial_dropout", [](const TensorList& in) {
    Generator gen(9);
    return ops::spatial_dropout(in[0], 0.5, gen);
  }, {x});
  // The backward of resize_bilinear is itself differentiable (double backward).
  Tensor g = random::normal({2, 5, 4, 2}, 0, 1, uint64_t{52}, DType::float64);
  check_gradients("resize_bilinear_grad", [](const TensorList& in) {
    return run_op("resize_bilinear_grad", {in[0]}, Attrs{{"size", std::vector<int64_t>{5, 4}},
                                                           {"input_shape", std::vector<int64_t>{2, 3, 2, 2}}})[0];
  }, {g});
}

TEST(SpatialDropout, OneDecisionPerSampleAndChannel) {
  Tensor x = Tensor::ones({4, 3, 5, 16});
  Generator gen(3);
  Tensor y = ops::spatial_dropout(x, 0.5, gen);
  auto v = y.to_vector<float>();
  int64_t kept = 0;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t c = 0; c < 16; ++c) {
      float first = v[((n * 3 + 0) * 5 + 0) * 16 + c];
      EXPECT_TRUE(first == 0.0f || first == 2.0f);
      kept += first != 0.0f;
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 5; ++w) EXPECT_EQ(v[((n * 3 + h) * 5 + w) * 16 + c], first);
    }
  EXPECT_GT(kept, 10);
  EXPECT_LT(kept, 54);
  Generator same(3);
  EXPECT_EQ(ops::spatial_dropout(x, 0.5, same).to_vector<float>(), v);
  EXPECT_THROW(ops::spatial_dropout(x, 1.0, gen), ValueError);
}

// ---------------- primitive cache ----------------

TEST(PoolNormCache, SecondStepCreatesNoPrimitive) {
  Tensor x = random::normal({2, 7, 7, 5}, 0, 1, uint64_t{61});
  auto step = [&] {
    Tensor w = x.clone().set_requires_grad(true);
    GradientTape tape;
    Tensor y = ops::batch_norm_training(w, Tensor::ones({5}), Tensor::zeros({5}), 1e-3).y;
    y = ops::max_pool2d(y, {3, 3}, {2, 2}, "same");
    y = ops::avg_pool2d(y, {2, 2}, {1, 1}, "valid");
    tape.gradient(ops::sum(y), {w});
  };
  step();
  auto before = cpu_primitive_cache_stats();
  step();
  auto after = cpu_primitive_cache_stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_GT(after.hits, before.hits);
}
