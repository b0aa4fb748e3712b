// CUDA kernels of the shape, indexing and extreme-reduction ops (transpose, slice, slice_grad,
// concatenate, take, take_grad, one_hot, argmax, argmin, max, min, reduce_extreme_grad,
// sum_squares_f64) against the CPU kernels: forward in every dtype each op allows, odd shapes,
// extent-1 axes and empty tensors; gradients through compute_gradients; long reductions that
// take the two-pass path; repeated indices in take_grad; NaN and tie rules; bad indices raising
// the CPU's IndexError with the same text. Every test skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <ostream>
#include <string>

#include "backend/autodiff.h"
#include "backend/cuda.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "support/cuda_test.h"

using namespace keras;


namespace {

// max |a - b| / max(1, max |b|); NaN must sit at the same places.
double rel_err(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.dtype(), want.dtype());
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return 1e300;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double diff = 0, scale = 1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) != std::isnan(g[i])) return 1e300;
    if (std::isnan(w[i])) continue;
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / scale;
}

// Deterministic CPU inputs: normal floats, small integers (many ties), or booleans.
Tensor input(const Shape& shape, DType dtype, uint64_t seed) {
  if (dtype == DType::float32 || dtype == DType::float64) return random::normal(shape, 0.0, 1.0, seed, dtype);
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7 + seed) % 19) - 9;
  Tensor t = Tensor::from_vector(v, shape, Device::cpu());
  return t.astype(dtype);
}

// Floats drawn from a few integers: many ties for max/min and argmax/argmin.
Tensor ties(const Shape& shape, DType dtype, uint64_t seed) { return input(shape, DType::int64, seed).astype(dtype); }

// x with NaN at the flat positions `at`.
Tensor with_nan(Tensor x, const std::vector<int64_t>& at) {
  std::vector<double> v = x.to_vector<double>();
  for (int64_t i : at) v[static_cast<size_t>(i)] = std::numeric_limits<double>::quiet_NaN();
  return Tensor::from_vector(v, x.shape(), Device::cpu()).astype(x.dtype());
}

Tensor indices(const std::vector<int64_t>& v, const Shape& shape, DType dtype) {
  return Tensor::from_vector(v, shape, Device::cpu()).astype(dtype);
}

const DType kAll[] = {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean};
const DType kNumeric[] = {DType::float32, DType::float64, DType::int32, DType::int64};

std::string short_name(DType t) { return t == DType::boolean ? "bool" : dtype_name(t); }

// A forward case: `make` builds CPU inputs, `fn` runs the op; both devices must agree.
struct Case {
  std::string name;
  std::function<TensorList()> make;
  std::function<Tensor(const TensorList&)> fn;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

TensorList moved(const TensorList& in, Device d) {
  TensorList out;
  for (const auto& t : in) out.push_back(t.to(d));
  return out;
}

std::vector<Case> forward_cases() {
  using L = const TensorList&;
  std::vector<Case> cases;
  auto one = [](Shape s, DType t, uint64_t seed = 1) { return [=] { return TensorList{input(s, t, seed)}; }; };
  auto transpose = [](std::vector<int> perm) { return [=](L x) { return ops::transpose(x[0], perm); }; };
  for (DType t : kAll) {
    const std::string n = "_" + short_name(t);
    cases.push_back({"transpose_2d" + n, one({37, 65}, t), transpose({1, 0})});
    cases.push_back({"transpose_nhwc_nchw" + n, one({2, 33, 17, 3}, t), transpose({0, 3, 1, 2})});
    cases.push_back({"transpose_nchw_nhwc" + n, one({2, 5, 9, 31}, t), transpose({0, 2, 3, 1})});
    cases.push_back({"transpose_nhwc_nchw_tiled" + n, one({3, 40, 50, 20}, t), transpose({0, 3, 1, 2})});
    cases.push_back({"transpose_two_plane_axes" + n, one({2, 3, 40, 20}, t), transpose({1, 0, 3, 2})});
    cases.push_back({"transpose_inner_kept" + n, one({4, 5, 6}, t), transpose({1, 0, 2})});
    cases.push_back({"transpose_unit_axes" + n, one({3, 1, 4, 5}, t), transpose({2, 1, 0, 3})});
    cases.push_back({"transpose_negative_perm" + n, one({6, 7}, t), transpose({-1, -2})});
    cases.push_back({"transpose_empty" + n, one({0, 3}, t), transpose({1, 0})});
    cases.push_back({"slice" + n, one({7, 9}, t), [](L x) { return ops::slice(x[0], {1, 2}, {3, -1}); }});
    cases.push_back({"slice_odd_3d" + n, one({33, 17, 5}, t), [](L x) { return ops::slice(x[0], {1, 2, 1}, {31, 14, 3}); }});
    cases.push_back({"slice_full_rows" + n, one({6, 5, 8}, t), [](L x) { return ops::slice(x[0], {2, 0, 0}, {3, 5, 8}); }});
    cases.push_back({"slice_empty" + n, one({3, 4}, t), [](L x) { return ops::slice(x[0], {3, 0}, {0, 4}); }});
    cases.push_back({"concatenate_last" + n, [=] { return TensorList{input({3, 4}, t, 1), input({3, 5}, t, 2)}; },
                     [](L x) { return ops::concatenate(x, -1); }});
    cases.push_back({"concatenate_first" + n, [=] { return TensorList{input({2, 3, 4}, t, 1), input({5, 3, 4}, t, 2)}; },
                     [](L x) { return ops::concatenate(x, 0); }});
    cases.push_back({"concatenate_empty_part" + n,
                     [=] { return TensorList{input({2, 0, 4}, t, 1), input({2, 3, 4}, t, 2), input({2, 1, 4}, t, 3)}; },
                     [](L x) { return ops::concatenate(x, 1); }});
    cases.push_back({"take_rows" + n, [=] { return TensorList{input({10, 6}, t, 1), indices({3, -1, 0, 9, 3}, {5}, DType::int64)}; },
                     [](L x) { return ops::take(x[0], x[1], 0); }});
    cases.push_back({"take_middle_axis" + n,
                     [=] { return TensorList{input({4, 7, 3}, t, 1), indices({0, -7, 6, 2, 2, -1}, {2, 3}, DType::int32)}; },
                     [](L x) { return ops::take(x[0], x[1], 1); }});
    cases.push_back({"take_last_axis" + n, [=] { return TensorList{input({5, 9}, t, 1), indices({8, 0}, {2}, DType::int32)}; },
                     [](L x) { return ops::take(x[0], x[1], -1); }});
    cases.push_back({"take_no_indices" + n, [=] { return TensorList{input({5, 4}, t, 1), indices({}, {0}, DType::int64)}; },
                     [](L x) { return ops::take(x[0], x[1], 0); }});
    cases.push_back({"one_hot_to" + n, [] { return TensorList{indices({0, 4, 2, 2, 1, 3}, {2, 3}, DType::int32)}; },
                     [t](L x) { return ops::one_hot(x[0], 5, t); }});
    cases.push_back({"max_all" + n, one({3, 4, 5}, t), [](L x) { return ops::max(x[0]); }});
    cases.push_back({"min_axes_0_2" + n, one({3, 4, 5}, t), [](L x) { return ops::min(x[0], {0, 2}); }});
    cases.push_back({"max_keepdims" + n, one({6, 1, 7}, t), [](L x) { return ops::max(x[0], {-1}, true); }});
  }
  for (DType t : kNumeric) {
    const std::string n = "_" + short_name(t);
    cases.push_back({"argmax_last" + n, [=] { return TensorList{ties({7, 9}, t, 1)}; }, [](L x) { return ops::argmax(x[0], -1); }});
    cases.push_back({"argmin_first" + n, [=] { return TensorList{ties({7, 9}, t, 2)}; }, [](L x) { return ops::argmin(x[0], 0); }});
    cases.push_back({"argmax_long_rows" + n, [=] { return TensorList{ties({3, 70001}, t, 3)}; }, [](L x) { return ops::argmax(x[0], 1); }});
    cases.push_back({"argmin_long_cols" + n, [=] { return TensorList{ties({100003, 3}, t, 4)}; }, [](L x) { return ops::argmin(x[0], 0); }});
    cases.push_back({"argmax_middle" + n, [=] { return TensorList{ties({4, 300, 5}, t, 5)}; }, [](L x) { return ops::argmax(x[0], 1); }});
    cases.push_back({"max_long_rows" + n, one({3, 100001}, t), [](L x) { return ops::max(x[0], {1}); }});
    cases.push_back({"min_long_cols" + n, one({70001, 3}, t), [](L x) { return ops::min(x[0], {0}); }});
    cases.push_back({"max_many_rows" + n, one({50000, 70}, t), [](L x) { return ops::max(x[0], {1}); }});
    cases.push_back({"min_short_rows" + n, one({1000, 5}, t), [](L x) { return ops::min(x[0], {1}); }});
  }
  for (DType t : {DType::float32, DType::float64}) {
    const std::string n = "_" + short_name(t);
    auto nan_rows = [=] { return TensorList{with_nan(ties({4, 9}, t, 1), {3, 7, 20, 35})}; };
    cases.push_back({"argmax_nan" + n, nan_rows, [](L x) { return ops::argmax(x[0], -1); }});
    cases.push_back({"argmin_nan_cols" + n, nan_rows, [](L x) { return ops::argmin(x[0], 0); }});
    cases.push_back({"max_nan" + n, nan_rows, [](L x) { return ops::max(x[0], {1}); }});
    cases.push_back({"min_nan_all" + n, [=] { return TensorList{with_nan(input({300000}, t, 1), {123457})}; },
                     [](L x) { return ops::min(x[0]); }});
    cases.push_back({"sum_squares_f64" + n, one({1001, 3}, t),
                     [](L x) { return run_op1(OpRegistry::instance().find("sum_squares_f64"), {x[0]}); }});
    cases.push_back({"sum_squares_f64_empty" + n, one({0, 3}, t),
                     [](L x) { return run_op1(OpRegistry::instance().find("sum_squares_f64"), {x[0]}); }});
    cases.push_back({"slice_grad" + n, one({3, 4}, t), [](L x) {
                       return run_op1(OpRegistry::instance().find("slice_grad"), {x[0]},
                                      Attrs{{"shape", Shape{5, 7}}, {"begin", std::vector<int64_t>{1, 2}}});
                     }});
    cases.push_back({"take_grad_repeats" + n,
                     [=] {
                       std::vector<int64_t> idx(10000);
                       for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>((i * i) % 7) - (i % 3 == 0 ? 7 : 0);
                       return TensorList{input({10000, 33}, t, 1), indices(idx, {10000}, DType::int32)};
                     },
                     [](L x) {
                       return run_op1(OpRegistry::instance().find("take_grad"), {x[0], x[1]},
                                      Attrs{{"axis", int64_t{0}}, {"shape", Shape{7, 33}}});
                     }});
    cases.push_back({"take_grad_axis1" + n,
                     [=] { return TensorList{input({3, 6, 2}, t, 1), indices({4, 0, 4, 4, 1, 4}, {6}, DType::int64)}; },
                     [](L x) {
                       return run_op1(OpRegistry::instance().find("take_grad"), {x[0], x[1]},
                                      Attrs{{"axis", int64_t{1}}, {"shape", Shape{3, 5, 2}}});
                     }});
  }
  cases.push_back({"max_scalar", one({}, DType::float32), [](L x) { return ops::max(x[0]); }});
  cases.push_back({"one_hot_empty", [] { return TensorList{indices({}, {0, 3}, DType::int64)}; },
                   [](L x) { return ops::one_hot(x[0], 4); }});
  cases.push_back({"take_grad_int32", [] { return TensorList{input({6, 2}, DType::int32, 1), indices({1, 1, 0, 1, 2, 1}, {6}, DType::int64)}; },
                   [](L x) {
                     return run_op1(OpRegistry::instance().find("take_grad"), {x[0], x[1]},
                                    Attrs{{"axis", int64_t{0}}, {"shape", Shape{4, 2}}});
                   }});
  return cases;
}

class CudaShapeOp : public ::testing::TestWithParam<Case> {};

TEST_P(CudaShapeOp, MatchesCpu) {
  REQUIRE_CUDA();
  const Case& c = GetParam();
  TensorList cpu_in = c.make();
  Tensor want = c.fn(cpu_in);
  Tensor got = c.fn(moved(cpu_in, Device::cuda(0)));
  EXPECT_EQ(got.device(), Device::cuda(0));
  EXPECT_LE(rel_err(got.to(Device::cpu()), want), 1e-5) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaShapeOp, ::testing::ValuesIn(forward_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// ---- gradients through the tape (GradientTape over compute_gradients) ----

struct GradCase {
  std::string name;
  std::function<TensorList(DType)> make;  // CPU inputs; the first `differentiable` get gradients
  size_t differentiable;
  std::function<Tensor(const TensorList&)> loss;
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

class CudaShapeGrad : public ::testing::TestWithParam<std::tuple<GradCase, DType>> {};

TEST_P(CudaShapeGrad, MatchesCpu) {
  REQUIRE_CUDA();
  const auto& [c, dtype] = GetParam();
  TensorList base = c.make(dtype);
  auto grads = [&](Device d) {
    GradientTape tape;  // ops record only under a tape
    TensorList in = moved(base, d), sources;
    for (size_t i = 0; i < c.differentiable; ++i) {
      in[i].set_requires_grad(true);
      sources.push_back(in[i]);
    }
    Tensor loss = c.loss(in);
    TensorList g = tape.gradient(loss, sources);
    g.push_back(loss);
    return g;
  };
  TensorList want = grads(Device::cpu()), got = grads(Device::cuda(0));
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].device(), Device::cuda(0));
    EXPECT_LE(rel_err(got[i].to(Device::cpu()), want[i]), 1e-5) << c.name << " gradient " << i;
  }
}

std::vector<GradCase> grad_cases() {
  using L = const TensorList&;
  // A weighted sum, so that every output element's gradient differs.
  auto weighted = [](const Tensor& y, const Tensor& w) { return ops::sum(ops::multiply(y, w)); };
  return {
      {"transpose_nhwc_nchw", [](DType t) { return TensorList{input({2, 9, 7, 3}, t, 1), input({2, 3, 9, 7}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::transpose(x[0], {0, 3, 1, 2}), x[1]); }},
      {"transpose_tiled", [](DType t) { return TensorList{input({2, 3, 40, 20}, t, 1), input({3, 2, 20, 40}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::transpose(x[0], {1, 0, 3, 2}), x[1]); }},
      {"transpose_inner_kept", [](DType t) { return TensorList{input({4, 5, 6}, t, 1), input({5, 4, 6}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::transpose(x[0], {1, 0, 2}), x[1]); }},
      {"slice", [](DType t) { return TensorList{input({9, 11}, t, 1), input({4, 8}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::slice(x[0], {2, 3}, {4, -1}), x[1]); }},
      {"concatenate", [](DType t) { return TensorList{input({3, 4}, t, 1), input({3, 1}, t, 2), input({3, 5}, t, 3)}; }, 2,
       [=](L x) { return weighted(ops::concatenate({x[0], x[1]}, 1), x[2]); }},
      {"take_repeated", [](DType t) {
         return TensorList{input({6, 5}, t, 1), input({9, 5}, t, 2), indices({0, 5, 5, -1, 2, 0, 5, 3, 5}, {9}, DType::int32)};
       }, 1, [=](L x) { return weighted(ops::take(x[0], x[2], 0), x[1]); }},
      {"max_ties", [](DType t) { return TensorList{ties({6, 40}, t, 1), input({6}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::max(x[0], {1}), x[1]); }},
      {"min_ties_cols", [](DType t) { return TensorList{ties({40, 6}, t, 1), input({1, 6}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::min(x[0], {0}, true), x[1]); }},
      {"max_all_ties", [](DType t) { return TensorList{ties({3, 5, 7}, t, 3)}; }, 1,
       [](L x) { return ops::max(x[0]); }},
      {"max_long_rows", [](DType t) { return TensorList{ties({2, 200000}, t, 4), input({2}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::max(x[0], {1}), x[1]); }},
      {"max_nan", [](DType t) { return TensorList{with_nan(ties({3, 8}, t, 5), {9}), input({3}, t, 2)}; }, 1,
       [=](L x) { return weighted(ops::max(x[0], {1}), x[1]); }},
  };
}

INSTANTIATE_TEST_SUITE_P(Grads, CudaShapeGrad,
                         ::testing::Combine(::testing::ValuesIn(grad_cases()),
                                            ::testing::Values(DType::float32, DType::float64)),
                         [](const ::testing::TestParamInfo<std::tuple<GradCase, DType>>& info) {
                           return std::get<0>(info.param).name + "_" + short_name(std::get<1>(info.param));
                         });

// ---- long reductions: the two-pass path, and its speed ----

TEST(CudaShapeReduce, FiveMillionElements) {
  REQUIRE_CUDA();
  for (DType t : {DType::float32, DType::float64}) {
    Tensor x = input({5'000'003}, t, 9);
    Tensor g = x.to(Device::cuda(0));
    const OpDef& sq = OpRegistry::instance().find("sum_squares_f64");
    EXPECT_LE(rel_err(ops::max(g).to(Device::cpu()), ops::max(x)), 0.0) << short_name(t);
    EXPECT_LE(rel_err(ops::min(g).to(Device::cpu()), ops::min(x)), 0.0) << short_name(t);
    EXPECT_LE(rel_err(ops::argmax(g, 0).to(Device::cpu()), ops::argmax(x, 0)), 0.0) << short_name(t);
    EXPECT_NEAR(run_op1(sq, {g}).item(), run_op1(sq, {x}).item(), 1e-9 * run_op1(sq, {x}).item()) << short_name(t);
  }
}

// 64M float32 elements (the two-pass reductions at full scale; their speed is measured by
// apps/gpu_op_bench, never here): one large element placed late must win, sums stay exact.
TEST(CudaShapeReduce, SixtyFourMillionElements) {
  REQUIRE_CUDA();
  Tensor g = Tensor::full({64 << 20}, 0.25, DType::float32, Device::cpu());
  g.data<float>()[(64 << 20) - 5] = 3.0f;
  Tensor d = g.to(Device::cuda(0));
  const OpDef& sq = OpRegistry::instance().find("sum_squares_f64");
  EXPECT_EQ(ops::max(d).item(), 3.0);
  EXPECT_EQ(ops::argmax(d, 0).item(), double((64 << 20) - 5));
  EXPECT_EQ(run_op1(sq, {d}).item(), 0.0625 * ((64 << 20) - 1) + 9.0);
}

// ---- bad indices: the CPU's error type and text ----

std::string error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const IndexError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong type: ") + e.what();
  }
  return "no error";
}

TEST(CudaShapeIndex, BadIndicesRaiseTheCpuError) {
  REQUIRE_CUDA();
  Device gpu = Device::cuda(0);
  Tensor x = input({10, 3}, DType::float32, 1);
  for (DType it : {DType::int32, DType::int64}) {
    Tensor bad = indices({1, 9, -10, 10, -11, 4}, {2, 3}, it);
    std::string want = error_text([&] { ops::take(x, bad, 0); });
    EXPECT_NE(want.find("index 10 at position 3"), std::string::npos) << want;
    EXPECT_EQ(error_text([&] { ops::take(x.to(gpu), bad.to(gpu), 0); }), want);

    Tensor g = input({2, 3, 3}, DType::float32, 2);
    Attrs a{{"axis", int64_t{0}}, {"shape", Shape{10, 3}}};
    const OpDef& tg = OpRegistry::instance().find("take_grad");
    want = error_text([&] { run_op1(tg, {g, bad}, a); });
    EXPECT_EQ(error_text([&] { run_op1(tg, {g.to(gpu), bad.to(gpu)}, a); }), want);

    Tensor labels = indices({0, 2, 3, 1, -1, 3}, {3, 2}, it);
    want = error_text([&] { ops::one_hot(labels, 3); });
    EXPECT_NE(want.find("label 3 at position"), std::string::npos) << want;
    EXPECT_EQ(error_text([&] { ops::one_hot(labels.to(gpu), 3); }), want);
  }
  // The device still works after the errors.
  Tensor ok = indices({2, 0}, {2}, DType::int64);
  EXPECT_LE(rel_err(ops::take(x.to(gpu), ok.to(gpu), 0).to(Device::cpu()), ops::take(x, ok, 0)), 0.0);
}

}  // namespace
