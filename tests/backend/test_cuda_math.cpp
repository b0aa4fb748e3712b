// CUDA kernels of the elementwise maths and activation ops (backend/cuda/math_ops.cpp,
// activation_ops.cpp) against the CPU kernels: every op forward (float32, float64, the integer
// and bool dtypes the op accepts; broadcast shapes for the binary ops and where; odd, size-1 and
// empty shapes), every differentiable op's gradients through compute_gradients, and special
// inputs (NaN, large magnitudes, zeros) elementwise. Each test skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <string>

#include "backend/autodiff.h"
#include "backend/cuda.h"
#include "backend/ops.h"
#include "support/cuda_test.h"

using namespace keras;


namespace {

constexpr double kTol = 1e-5;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Worst elementwise error |got - want| / max(1, |want|): relative for large values, absolute near
// zero. NaN must meet NaN and an infinity the same infinity; dtypes and shapes must agree.
double elem_err(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.dtype(), want.dtype());
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return 1e300;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double err = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      if (std::isnan(w[i]) != std::isnan(g[i])) return 1e300;
      continue;
    }
    if (std::isinf(w[i]) || std::isinf(g[i])) {
      if (g[i] != w[i]) return 1e300;
      continue;
    }
    err = std::max(err, std::abs(g[i] - w[i]) / std::max(1.0, std::abs(w[i])));
  }
  return err;
}

// How a case fills its inputs.
enum class Values {
  mixed,     // k / 8 in [-6, 6]: negatives, zero, ties, and the kinks -3, 0, 3, 6
  smooth,    // mixed + 1/16: never on a kink, never zero (gradients)
  positive,  // |mixed| + 0.25 (log, sqrt, pow bases)
  fixed,     // the case's `fixed` list, repeated
};

Tensor make_input(const Shape& shape, DType dtype, uint64_t seed, Values values, const std::vector<double>& fixed) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    const bool integral = dtype == DType::int32 || dtype == DType::int64;
    const int64_t k = static_cast<int64_t>((i * 37 + seed * 11) % 97) - 48;
    double x = integral ? static_cast<double>(static_cast<int64_t>((i * 7 + seed) % 19) - 9) : k / 8.0;
    switch (values) {
      case Values::mixed: break;
      case Values::smooth: x = integral ? x : x + 1.0 / 16; break;
      case Values::positive: x = integral ? std::abs(x) : std::abs(x) + 0.25; break;
      case Values::fixed: x = fixed[(i + seed) % fixed.size()]; break;
    }
    v[i] = x;
  }
  return Tensor::from_vector(v, shape, Device::cpu()).astype(dtype);
}

using Fn = std::function<Tensor(const TensorList&)>;
using L = const TensorList&;

const std::vector<DType> kFloats = {DType::float32, DType::float64};
const std::vector<DType> kNumeric = {DType::float32, DType::float64, DType::int32, DType::int64};
const std::vector<DType> kAll = {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean};

struct MathCase {
  std::string name;
  std::vector<Shape> shapes;
  Fn fn;
  std::vector<DType> dtypes = kFloats;
  Values values = Values::mixed;
  std::vector<double> fixed = {};
};

// One test per (case, dtype).
struct Param {
  MathCase c;
  DType dtype;
  std::string name() const { return c.name + "_" + dtype_name(dtype); }
};
void PrintTo(const Param& p, std::ostream* os) { *os << p.name(); }

std::vector<Param> expand(const std::vector<MathCase>& cases) {
  std::vector<Param> out;
  for (const MathCase& c : cases)
    for (DType t : c.dtypes) out.push_back({c, t});
  return out;
}

Tensor zero_like(const Tensor& t) { return Tensor::scalar(0, t.dtype(), t.device()); }

// Every activation op by a short name, with its attrs as the public functions set them.
std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> activations() {
  return {
      {"leaky_relu", [](const Tensor& x) { return ops::leaky_relu(x); }},
      {"leaky_relu_0p1", [](const Tensor& x) { return ops::leaky_relu(x, 0.1); }},
      {"relu6", [](const Tensor& x) { return ops::relu6(x); }},
      {"elu", [](const Tensor& x) { return ops::elu(x); }},
      {"elu_0p5", [](const Tensor& x) { return ops::elu(x, 0.5); }},
      {"selu", [](const Tensor& x) { return ops::selu(x); }},
      {"gelu", [](const Tensor& x) { return ops::gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return ops::gelu(x, true); }},
      {"sigmoid", [](const Tensor& x) { return ops::sigmoid(x); }},
      {"hard_sigmoid", [](const Tensor& x) { return ops::hard_sigmoid(x); }},
      {"hard_silu", [](const Tensor& x) { return ops::hard_silu(x); }},
      {"tanh", [](const Tensor& x) { return ops::tanh(x); }},
      {"softplus", [](const Tensor& x) { return ops::softplus(x); }},
      {"softsign", [](const Tensor& x) { return ops::softsign(x); }},
      {"silu", [](const Tensor& x) { return ops::silu(x); }},
      {"exponential", [](const Tensor& x) { return ops::exponential(x); }},
      {"activation_gelu", [](const Tensor& x) { return ops::activation("gelu", x); }},
      {"activation_swish", [](const Tensor& x) { return ops::activation("swish", x); }},
  };
}

Tensor run_on(const MathCase& c, DType dtype, Device d) {
  TensorList in;
  for (size_t i = 0; i < c.shapes.size(); ++i) in.push_back(make_input(c.shapes[i], dtype, 3 + i, c.values, c.fixed).to(d));
  return c.fn(in);
}

// ---- forward ----

std::vector<MathCase> forward_cases() {
  std::vector<MathCase> cs = {
      {"abs", {{33, 7}}, [](L t) { return ops::abs(t[0]); }, kNumeric},
      {"sign", {{33, 7}}, [](L t) { return ops::sign(t[0]); }, kNumeric},
      {"square", {{5, 1, 9}}, [](L t) { return ops::square(t[0]); }, kNumeric},
      {"exp", {{3, 1001}}, [](L t) { return ops::exp(t[0]); }},
      {"exp_large", {{40}}, [](L t) { return ops::exp(t[0]); }, kFloats, Values::fixed, {80, -80, 50, -50, 0, 1e-8, 88.5, -100}},
      // 4096+ float32 elements take the CPU's oneDNN path instead of its loops.
      {"exp_onednn_size", {{5000}}, [](L t) { return ops::exp(t[0]); }},
      {"log_onednn_size", {{5000}}, [](L t) { return ops::log(t[0]); }, kFloats, Values::positive},
      {"sqrt_onednn_size", {{5000}}, [](L t) { return ops::sqrt(t[0]); }, kFloats, Values::positive},
      {"log", {{3, 1001}}, [](L t) { return ops::log(t[0]); }, kFloats, Values::positive},
      {"log_zero_negative", {{6}}, [](L t) { return ops::log(t[0]); }, kFloats, Values::fixed, {0, -1, 1, 1e-30, 2, 1e30}},
      {"sqrt", {{65}}, [](L t) { return ops::sqrt(t[0]); }, kFloats, Values::positive},
      {"sqrt_negative", {{4}}, [](L t) { return ops::sqrt(t[0]); }, kFloats, Values::fixed, {-1, 0, 4, 2}},
      {"pow_scalar_2", {{17, 3}}, [](L t) { return ops::pow(t[0], 2.0); }, kNumeric},
      {"pow_scalar_3", {{17, 3}}, [](L t) { return ops::pow(t[0], 3.0); }, kNumeric},
      {"pow_scalar_1", {{17}}, [](L t) { return ops::pow(t[0], 1.0); }, kNumeric},
      {"pow_scalar_0", {{17}}, [](L t) { return ops::pow(t[0], 0.0); }, kNumeric},
      {"pow_scalar_half", {{17, 3}}, [](L t) { return ops::pow(t[0], 0.5); }, kNumeric, Values::positive},
      {"pow_scalar_neg_1p5", {{17, 3}}, [](L t) { return ops::pow(t[0], -1.5); }, kFloats, Values::positive},
      {"pow_scalar_2p7_int", {{17}}, [](L t) { return ops::pow(t[0], 2.7); }, {DType::int32, DType::int64}},
      {"clip", {{33, 7}}, [](L t) { return ops::clip(t[0], -1.5, 2.25); }, kNumeric},
      {"clip_int_bounds", {{33}}, [](L t) { return ops::clip(t[0], -3, 4); }, kNumeric},
      {"maximum", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::maximum(t[0], t[1]); }, kNumeric},
      {"minimum", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::minimum(t[0], t[1]); }, kNumeric},
      {"maximum_same", {{1000}, {1000}}, [](L t) { return ops::maximum(t[0], t[1]); }, kNumeric},
      {"minimum_rank0", {{7, 3}, {}}, [](L t) { return ops::minimum(t[0], t[1]); }, kNumeric},
      {"pow", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::pow(t[0], t[1]); }, kFloats, Values::positive},
      {"pow_int", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::pow(t[0], ops::abs(t[1])); }, {DType::int32, DType::int64}},
      {"pow_same", {{300}, {300}}, [](L t) { return ops::pow(t[0], t[1]); }, kFloats, Values::positive},
      {"equal", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::equal(t[0], t[1]); }, kAll},
      {"not_equal", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::not_equal(t[0], t[1]); }, kAll},
      {"less", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::less(t[0], t[1]); }, kAll},
      {"less_equal", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::less_equal(t[0], t[1]); }, kAll},
      {"greater", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::greater(t[0], t[1]); }, kAll},
      {"greater_equal", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::greater_equal(t[0], t[1]); }, kAll},
      {"equal_same", {{97}, {97}}, [](L t) { return ops::equal(t[0], t[1]); }, kAll},
      {"less_rank0", {{}, {2, 3}}, [](L t) { return ops::less(t[0], t[1]); }, kAll},
      {"where", {{4, 1, 5}, {3, 1}, {5}},
       [](L t) { return ops::where(ops::greater(t[0], zero_like(t[0])), t[1], t[2]); }, kNumeric},
      {"where_same", {{2, 33}, {2, 33}, {2, 33}},
       [](L t) { return ops::where(ops::less(t[0], t[1]), t[1], t[2]); }, kAll},
      {"where_cond_broadcast", {{5}, {3, 5}, {}},
       [](L t) { return ops::where(ops::greater(t[0], zero_like(t[0])), t[1], t[2]); }, kNumeric},
      {"broadcast_to", {{3, 1}}, [](L t) { return ops::broadcast_to(t[0], {2, 3, 4}); }, kAll},
      {"broadcast_to_rank0", {{}}, [](L t) { return ops::broadcast_to(t[0], {5, 7}); }, kAll},
      {"broadcast_to_inner", {{1, 40}}, [](L t) { return ops::broadcast_to(t[0], {33, 40}); }, kAll},
      {"cast_f32", {{5, 7}}, [](L t) { return ops::cast(t[0], DType::float32); }, kAll},
      {"cast_f64", {{5, 7}}, [](L t) { return ops::cast(t[0], DType::float64); }, kAll},
      {"cast_i32", {{5, 7}}, [](L t) { return ops::cast(t[0], DType::int32); }, kNumeric},
      {"cast_i64", {{5, 7}}, [](L t) { return ops::cast(t[0], DType::int64); }, kAll},
      {"cast_bool", {{5, 7}}, [](L t) { return ops::cast(t[0], DType::boolean); }, kAll},
      // Empty tensors: nothing to launch, outputs of the right shape and dtype.
      {"empty_exp", {{0, 3}}, [](L t) { return ops::exp(t[0]); }},
      {"empty_maximum", {{0, 3}, {3}}, [](L t) { return ops::maximum(t[0], t[1]); }, kNumeric},
      {"empty_less", {{0, 3}, {1, 3}}, [](L t) { return ops::less(t[0], t[1]); }, kAll},
      {"empty_where", {{0, 1}, {1, 4}, {4}},
       [](L t) { return ops::where(ops::greater(t[0], zero_like(t[0])), t[1], t[2]); }, kNumeric},
      {"empty_broadcast_to", {{1, 3}}, [](L t) { return ops::broadcast_to(t[0], {0, 3}); }, kAll},
      {"empty_sigmoid", {{0}}, [](L t) { return ops::sigmoid(t[0]); }},
      {"empty_cast", {{0, 2}}, [](L t) { return ops::cast(t[0], DType::int32); }, kFloats},
  };
  for (auto& [name, f] : activations()) {
    cs.push_back({name, {{33, 7}}, [f = f](L t) { return f(t[0]); }});
    cs.push_back({name + "_long", {{3, 1001}}, [f = f](L t) { return f(t[0]); }});
  }
  return cs;
}

class CudaMath : public ::testing::TestWithParam<Param> {};

TEST_P(CudaMath, MatchesCpu) {
  REQUIRE_CUDA();
  const Param& p = GetParam();
  Tensor want = run_on(p.c, p.dtype, Device::cpu());
  Tensor got = run_on(p.c, p.dtype, Device::cuda(0));
  EXPECT_EQ(got.device(), Device::cuda(0));
  EXPECT_LE(elem_err(got, want), kTol) << p.name();
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaMath, ::testing::ValuesIn(expand(forward_cases())),
                         [](const ::testing::TestParamInfo<Param>& info) { return info.param.name(); });

// ---- special values: NaN, signed zeros, large magnitudes (and infinities in float64, whose CPU
// kernels are the plain loops the CUDA formulas copy) ----

std::vector<double> specials(DType t) {
  std::vector<double> v = {kNaN, 0.0, -0.0, 1e-7, -1e-7, 0.5, -0.5, 3.0, -3.0, 6.0, 20.0, -20.0, 50.0, -50.0};
  if (t == DType::float64) {
    v.insert(v.end(), {80.0, -80.0, 700.0, -700.0, kInf, -kInf});
  }
  return v;
}

std::vector<MathCase> special_cases() {
  std::vector<MathCase> cs = {
      {"abs", {{}}, [](L t) { return ops::abs(t[0]); }},
      {"sign", {{}}, [](L t) { return ops::sign(t[0]); }},
      {"square", {{}}, [](L t) { return ops::square(t[0]); }},
      {"exp", {{}}, [](L t) { return ops::exp(t[0]); }},
      {"log", {{}}, [](L t) { return ops::log(t[0]); }},
      {"sqrt", {{}}, [](L t) { return ops::sqrt(t[0]); }},
      {"pow_scalar", {{}}, [](L t) { return ops::pow(t[0], 1.5); }},
      {"clip", {{}}, [](L t) { return ops::clip(t[0], -1, 2); }},
      {"maximum_nan_left", {{}}, [](L t) { return ops::maximum(t[0], ops::multiply(t[0], 0.5)); }},
      {"maximum_nan_right", {{}}, [](L t) { return ops::maximum(ops::multiply(t[0], 0.5), t[0]); }},
      {"minimum_nan_left", {{}}, [](L t) { return ops::minimum(t[0], ops::multiply(t[0], 0.5)); }},
      {"minimum_nan_right", {{}}, [](L t) { return ops::minimum(ops::multiply(t[0], 0.5), t[0]); }},
      {"equal_nan", {{}}, [](L t) { return ops::equal(t[0], t[0]); }},
      {"not_equal_nan", {{}}, [](L t) { return ops::not_equal(t[0], t[0]); }},
      {"less_nan", {{}}, [](L t) { return ops::less(t[0], zero_like(t[0])); }},
      {"where_nan", {{}}, [](L t) { return ops::where(ops::greater(t[0], zero_like(t[0])), t[0], zero_like(t[0])); }},
  };
  for (auto& [name, f] : activations()) cs.push_back({name, {{}}, [f = f](L t) { return f(t[0]); }});
  return cs;
}

class CudaMathSpecial : public ::testing::TestWithParam<Param> {};

TEST_P(CudaMathSpecial, MatchesCpu) {
  REQUIRE_CUDA();
  const Param& p = GetParam();
  std::vector<double> v = specials(p.dtype);
  Tensor x = Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, Device::cpu()).astype(p.dtype);
  // The CPU's float32 exponential runs oneDNN's eltwise_exp, which turns NaN into +inf against
  // the activations' NaN-through contract (backend/cpu/activation_kernels.cpp); the CUDA kernel
  // keeps the contract, so that case is compared with the CPU's float64 loop, rounded.
  const bool cpu_f32_nan_bug = p.dtype == DType::float32 && p.c.name == "exponential";
  Tensor want = cpu_f32_nan_bug ? p.c.fn({x.astype(DType::float64)}).astype(DType::float32) : p.c.fn({x});
  Tensor got = p.c.fn({x.to(Device::cuda(0))});
  EXPECT_LE(elem_err(got, want), kTol) << p.name();
}

INSTANTIATE_TEST_SUITE_P(Specials, CudaMathSpecial, ::testing::ValuesIn(expand(special_cases())),
                         [](const ::testing::TestParamInfo<Param>& info) { return info.param.name(); });

// ---- gradients through compute_gradients: loss = sum(f(inputs) * w) with a fixed w, so every
// output element carries its own weight ----

std::vector<MathCase> grad_cases() {
  const std::vector<double> large = {-50, 50, -20, 20, 0.3, -0.7, 80, -80};
  std::vector<MathCase> cs = {
      {"abs", {{33, 7}}, [](L t) { return ops::abs(t[0]); }, kFloats, Values::smooth},
      {"square", {{33, 7}}, [](L t) { return ops::square(t[0]); }, kFloats, Values::smooth},
      {"exp", {{33, 7}}, [](L t) { return ops::exp(t[0]); }, kFloats, Values::smooth},
      {"log", {{33, 7}}, [](L t) { return ops::log(t[0]); }, kFloats, Values::positive},
      {"sqrt", {{33, 7}}, [](L t) { return ops::sqrt(t[0]); }, kFloats, Values::positive},
      {"pow_scalar_3", {{33, 7}}, [](L t) { return ops::pow(t[0], 3.0); }, kFloats, Values::smooth},
      {"pow_scalar_neg_half", {{33}}, [](L t) { return ops::pow(t[0], -0.5); }, kFloats, Values::positive},
      {"pow_scalar_0", {{33}}, [](L t) { return ops::pow(t[0], 0.0); }, kFloats, Values::smooth},
      {"clip", {{33, 7}}, [](L t) { return ops::clip(t[0], -1.5, 2.25); }, kFloats, Values::smooth},
      {"maximum", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::maximum(t[0], t[1]); }, kFloats, Values::smooth},
      {"minimum", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::minimum(t[0], t[1]); }, kFloats, Values::smooth},
      {"maximum_ties", {{6, 5}, {5}}, [](L t) { return ops::maximum(t[0], ops::abs(t[1])); }, kFloats, Values::mixed},
      {"pow", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::pow(t[0], t[1]); }, kFloats, Values::positive},
      {"where", {{4, 1, 5}, {3, 1}, {5}},
       [](L t) { return ops::where(ops::greater(t[0], zero_like(t[0])), t[1], t[2]); }, kFloats, Values::smooth},
      {"broadcast_to", {{3, 1}}, [](L t) { return ops::broadcast_to(t[0], {2, 3, 4}); }, kFloats, Values::smooth},
      {"cast_f32_f64", {{9}}, [](L t) { return ops::cast(t[0], t[0].dtype() == DType::float32 ? DType::float64 : DType::float32); },
       kFloats, Values::smooth},
  };
  for (auto& [name, f] : activations()) {
    cs.push_back({name, {{33, 7}}, [f = f](L t) { return f(t[0]); }, kFloats, Values::smooth});
    cs.push_back({name + "_large", {{8}}, [f = f](L t) { return f(t[0]); }, kFloats, Values::fixed, large});
  }
  return cs;
}

class CudaMathGrad : public ::testing::TestWithParam<Param> {};

TEST_P(CudaMathGrad, MatchesCpu) {
  REQUIRE_CUDA();
  const Param& p = GetParam();
  auto grads = [&](Device d) {
    GradientTape tape;  // ops record only under an active tape
    TensorList in;
    for (size_t i = 0; i < p.c.shapes.size(); ++i) {
      Tensor t = make_input(p.c.shapes[i], p.dtype, 3 + i, p.c.values, p.c.fixed).to(d);
      t.set_requires_grad(true);
      in.push_back(t);
    }
    Tensor y = p.c.fn(in);
    Tensor w = make_input(y.shape(), y.dtype(), 41, Values::smooth, {}).to(d);
    Tensor loss = ops::sum(ops::multiply(y, w));
    TensorList g = compute_gradients(loss, in);
    g.push_back(y);
    return g;
  };
  TensorList want = grads(Device::cpu()), got = grads(Device::cuda(0));
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    // where's condition input gets no gradient (undefined), on either device.
    EXPECT_EQ(got[i].defined(), want[i].defined()) << p.name() << " gradient " << i;
    if (!want[i].defined() || !got[i].defined()) continue;
    EXPECT_EQ(got[i].device(), Device::cuda(0));
    EXPECT_LE(elem_err(got[i], want[i]), kTol) << p.name() << " gradient " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Grads, CudaMathGrad, ::testing::ValuesIn(expand(grad_cases())),
                         [](const ::testing::TestParamInfo<Param>& info) { return info.param.name(); });

// ---- the _grad ops called directly, with the attrs the forward ops pass ----

TEST(CudaMathGradOps, LeakyReluGradKeepsAlpha) {
  REQUIRE_CUDA();
  for (DType t : kFloats) {
    Tensor x = make_input({40}, t, 5, Values::smooth, {});
    auto grad_of = [&](Device d) {
      GradientTape tape;
      Tensor xd = x.to(d).detach();  // its own leaf even when d is x's device
      xd.set_requires_grad(true);
      return compute_gradients(ops::sum(ops::leaky_relu(xd, 0.03)), {xd})[0];
    };
    EXPECT_LE(elem_err(grad_of(Device::cuda(0)), grad_of(Device::cpu())), kTol) << dtype_name(t);
  }
}

}  // namespace
