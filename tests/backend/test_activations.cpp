#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backend/autodiff.h"
#include "backend/cpu/activation_reference.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "backend/threads.h"
#include "tests/support/gradcheck.h"

using namespace keras;
using cpu::Eltwise;

namespace {

struct Case {
  std::string name;  // op name; the backward is name + "_grad"
  Eltwise kind;
  Attrs attrs;
  double alpha;  // what the kernel reads from attrs
  std::function<Tensor(const Tensor&)> fn;
  std::function<double(double)> keras_formula;
};

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<Case> cases() {
  return {
      {"relu", Eltwise::relu, {}, 0, [](const Tensor& x) { return ops::relu(x); },
       [](double x) { return std::max(x, 0.0); }},
      {"leaky_relu", Eltwise::leaky_relu, {{"alpha", 0.2}}, 0.2, [](const Tensor& x) { return ops::leaky_relu(x); },
       [](double x) { return x > 0 ? x : 0.2 * x; }},
      {"relu6", Eltwise::relu6, {}, 0, [](const Tensor& x) { return ops::relu6(x); },
       [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"elu", Eltwise::elu, {{"alpha", 1.0}}, 1.0, [](const Tensor& x) { return ops::elu(x); },
       [](double x) { return x > 0 ? x : std::exp(x) - 1; }},
      {"selu", Eltwise::selu, {}, 0, [](const Tensor& x) { return ops::selu(x); },
       [](double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * (std::exp(x) - 1)); }},
      {"gelu", Eltwise::gelu_erf, {{"approximate", false}}, 0, [](const Tensor& x) { return ops::gelu(x); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu", Eltwise::gelu_tanh, {{"approximate", true}}, 0, [](const Tensor& x) { return ops::gelu(x, true); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
      {"sigmoid", Eltwise::sigmoid, {}, 0, [](const Tensor& x) { return ops::sigmoid(x); }, sig},
      {"hard_sigmoid", Eltwise::hard_sigmoid, {}, 0, [](const Tensor& x) { return ops::hard_sigmoid(x); },
       [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; }},
      {"hard_silu", Eltwise::hard_silu, {}, 0, [](const Tensor& x) { return ops::hard_silu(x); },
       [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }},
      {"tanh", Eltwise::tanh, {}, 0, [](const Tensor& x) { return ops::tanh(x); }, [](double x) { return std::tanh(x); }},
      {"softplus", Eltwise::softplus, {}, 0, [](const Tensor& x) { return ops::softplus(x); },
       [](double x) { return std::log(1 + std::exp(x)); }},
      {"softsign", Eltwise::softsign, {}, 0, [](const Tensor& x) { return ops::softsign(x); },
       [](double x) { return x / (1 + std::abs(x)); }},
      {"silu", Eltwise::silu, {}, 0, [](const Tensor& x) { return ops::silu(x); }, [](double x) { return x * sig(x); }},
      {"exponential", Eltwise::exponential, {}, 0, [](const Tensor& x) { return ops::exponential(x); },
       [](double x) { return std::exp(x); }},
  };
}

std::string label(const Case& c) { return c.name + (c.kind == Eltwise::gelu_tanh ? "(approximate)" : ""); }

void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = element_as_double(a, i), y = element_as_double(b, i);
    ASSERT_NEAR(x, y, tol * std::max(1.0, std::abs(y))) << what << " at element " << i;
  }
}

}  // namespace

TEST(Activations, KerasValuesAtPoints) {
  const std::vector<double> points = {-7, -3, -2, -0.5, 0, 0.25, 1, 2, 3, 6.5};
  for (DType dtype : {DType::float32, DType::float64}) {
    Tensor x = Tensor::from_vector(points).astype(dtype);
    for (const Case& c : cases()) {
      Tensor y = c.fn(x);
      ASSERT_EQ(y.dtype(), dtype);
      for (size_t i = 0; i < points.size(); ++i)
        EXPECT_NEAR(element_as_double(y, i), c.keras_formula(points[i]), 2e-6 * std::max(1.0, std::abs(c.keras_formula(points[i]))))
            << label(c) << "(" << points[i] << ") " << dtype_name(dtype);
    }
  }
}

TEST(Activations, HandComputedSpotValues) {
  auto at = [](Tensor (*f)(const Tensor&), double v) {
    return f(Tensor::from_vector(std::vector<double>{v})).item();
  };
  EXPECT_DOUBLE_EQ(at(ops::relu, -1), 0);
  EXPECT_DOUBLE_EQ(at(ops::relu6, 7), 6);
  EXPECT_NEAR(ops::leaky_relu(Tensor::from_vector(std::vector<double>{-1})).item(), -0.2, 1e-15);  // Keras 3 default
  EXPECT_NEAR(ops::leaky_relu(Tensor::from_vector(std::vector<double>{-1}), 0.01).item(), -0.01, 1e-15);
  // Slopes that agree to 6 decimals still get their own oneDNN primitive.
  Tensor m = Tensor::from_vector(std::vector<float>{-1000});
  EXPECT_FLOAT_EQ(ops::leaky_relu(m, 0.0).item(), 0.0f);
  EXPECT_FLOAT_EQ(ops::leaky_relu(m, 1e-7).item(), -1e-4f);
  EXPECT_NEAR(ops::gelu(Tensor::from_vector(std::vector<double>{1})).item(), 0.8413447460685429, 1e-12);
  EXPECT_NEAR(ops::gelu(Tensor::from_vector(std::vector<double>{1}), true).item(), 0.8411919906082768, 1e-12);
  EXPECT_NEAR(at(ops::selu, -1), -1.1113307378125625, 1e-12);
  EXPECT_NEAR(at(ops::selu, 1), 1.0507009873554805, 1e-12);
  EXPECT_NEAR(at(ops::softplus, 0), 0.6931471805599453, 1e-12);
  EXPECT_NEAR(at(ops::softplus, 1000), 1000, 1e-9);  // no overflow
  EXPECT_NEAR(at(ops::sigmoid, 2), 0.8807970779778823, 1e-12);
  EXPECT_NEAR(at(ops::sigmoid, -1000), 0, 1e-300);
  EXPECT_DOUBLE_EQ(at(ops::hard_sigmoid, 0), 0.5);
  EXPECT_NEAR(at(ops::hard_sigmoid, 1), 4.0 / 6.0, 1e-15);
  EXPECT_DOUBLE_EQ(at(ops::hard_sigmoid, -3), 0);
  EXPECT_DOUBLE_EQ(at(ops::hard_sigmoid, 3), 1);
  EXPECT_NEAR(ops::elu(Tensor::from_vector(std::vector<double>{-1}), 2.0).item(), 2 * (std::exp(-1.0) - 1), 1e-15);
  EXPECT_DOUBLE_EQ(at(ops::softsign, 1), 0.5);
  EXPECT_NEAR(at(ops::silu, 1), 0.7310585786300049, 1e-12);
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2});
  EXPECT_TRUE(ops::linear(x).same(x));
}

// oneDNN (float32) against the plain loops, forward and backward, on sizes that are not
// multiples of any vector width.
// Keras 3.15.1 (TensorFlow backend, float64): keras.activations.hard_silu at these points and its
// tf.GradientTape gradient; the kinks -3 and 3 take the one-sided values 0 and 1.
TEST(Activations, HardSiluMatchesKeras3) {
  const std::vector<double> x = {-7, -3, -2, -0.5, 0, 0.25, 1, 2, 3, 6.5};
  const std::vector<double> y = {0, 0, -1.0 / 3, -0.20833333333333334, 0, 0.13541666666666666, 2.0 / 3, 5.0 / 3, 3, 6.5};
  const std::vector<double> dy = {0, 0, -1.0 / 6, 1.0 / 3, 0.5, 0.5833333333333333, 5.0 / 6, 7.0 / 6, 1, 1};
  for (DType dtype : {DType::float64, DType::float32}) {  // plain loops, then oneDNN's hardswish
    Tensor t = Tensor::from_vector(x).astype(dtype).set_requires_grad(true);
    GradientTape tape;
    Tensor out = ops::activation("hard_swish", t);
    Tensor g = tape.gradient(ops::sum(out), {t})[0];
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(element_as_double(out, i), y[i], 1e-6) << "hard_silu(" << x[i] << ") " << dtype_name(dtype);
      EXPECT_NEAR(element_as_double(g, i), dy[i], 1e-6) << "hard_silu'(" << x[i] << ") " << dtype_name(dtype);
    }
  }
}

TEST(Activations, OneDnnMatchesReference) {
  for (int64_t n : {1, 7, 1031}) {
    Tensor x = random::normal({n}, 0, 3, uint64_t(n));
    Tensor g = random::normal({n}, 0, 1, uint64_t(n + 1));
    for (const Case& c : cases()) {
      std::string what = label(c) + " n=" + std::to_string(n);
      Tensor y = c.fn(x);
      Tensor ref = Tensor::empty(x.shape());
      cpu::eltwise_forward_reference(c.kind, x, ref, c.alpha);
      expect_close(y, ref, 2e-6, what + " forward");
      Tensor saved = cpu::eltwise_uses_output(c.kind) ? ref : x;
      Tensor dx = run_op(c.name + "_grad", {g, saved}, c.attrs)[0];
      Tensor dref = Tensor::empty(x.shape());
      cpu::eltwise_backward_reference(c.kind, g, saved, dref, c.alpha);
      expect_close(dx, dref, 2e-5, what + " backward");
    }
  }
}

// Saturated inputs: no NaN or overflow in the stable forms (exponential overflows, as in Keras).
TEST(Activations, ExtremeInputsFloat32) {
  Tensor x = Tensor::from_vector(std::vector<float>{-1000, -50, 50, 1000});
  Tensor g = Tensor::ones({4});
  for (const Case& c : cases()) {
    if (c.kind == Eltwise::exponential) continue;
    Tensor y = c.fn(x);
    Tensor ref = Tensor::empty(x.shape());
    cpu::eltwise_forward_reference(c.kind, x, ref, c.alpha);
    for (int64_t i = 0; i < 4; ++i) ASSERT_TRUE(std::isfinite(element_as_double(y, i))) << label(c) << " at " << i;
    expect_close(y, ref, 1e-6, label(c) + " extreme forward");
    Tensor dx = run_op(c.name + "_grad", {g, cpu::eltwise_uses_output(c.kind) ? ref : x}, c.attrs)[0];
    for (int64_t i = 0; i < 4; ++i) ASSERT_TRUE(std::isfinite(element_as_double(dx, i))) << label(c) << " grad at " << i;
  }
}

TEST(Activations, GradientsFloat64) {
  for (const Case& c : cases()) {
    Tensor x = random::normal({2, 5}, 0, 2, uint64_t{11}, DType::float64);
    keras::testing::check_gradients(label(c), [&](const TensorList& in) { return c.fn(in[0]); }, {x});
  }
  Tensor x = random::normal({3, 4}, 0, 2, uint64_t{12}, DType::float64);
  keras::testing::check_gradients("leaky_relu(0.05)", [](const TensorList& in) { return ops::leaky_relu(in[0], 0.05); }, {x});
  keras::testing::check_gradients("elu(0.5)", [](const TensorList& in) { return ops::elu(in[0], 0.5); }, {x});
}

// The float32 backward runs on oneDNN; the sweep of steps in check_gradients copes with rounding.
TEST(Activations, GradientsFloat32OneDnn) {
  for (const Case& c : cases()) {
    Tensor x = random::normal({7}, 0, 2, uint64_t{13});
    keras::testing::check_gradients(label(c), [&](const TensorList& in) { return c.fn(in[0]); }, {x});
  }
}

TEST(Activations, SecondDerivativeOfPiecewiseLinear) {
  Tensor x = Tensor::from_vector(std::vector<double>{-1, 2});
  Tensor g = Tensor::from_vector(std::vector<double>{3, 5});
  keras::testing::check_gradients("relu_grad", [](const TensorList& in) { return run_op("relu_grad", {in[0], in[1]})[0]; },
                           {g, x}, {1});
}

TEST(Softmax, ValuesAndAxes) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 1, 1, 1}, {2, 3});
  auto y = ops::softmax(x).to_vector<float>();
  double e = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(y[0], std::exp(1.0) / e, 1e-6);
  EXPECT_NEAR(y[2], std::exp(3.0) / e, 1e-6);
  EXPECT_NEAR(y[4], 1.0 / 3, 1e-6);
  auto y0 = ops::softmax(x, 0).to_vector<float>();
  EXPECT_NEAR(y0[0], 0.5, 1e-6);
  EXPECT_NEAR(y0[2], std::exp(3.0) / (std::exp(3.0) + std::exp(1.0)), 1e-6);
  auto l = ops::log_softmax(x).to_vector<float>();
  EXPECT_NEAR(l[1], 2 - std::log(e), 1e-5);
  EXPECT_THROW(ops::softmax(x, 2), IndexError);
  EXPECT_THROW(ops::softmax(Tensor::scalar(1)), ShapeError);
  EXPECT_THROW(ops::softmax(Tensor::full({2}, 1, DType::int32)), TypeError);
}

TEST(Softmax, OneDnnMatchesReferenceOnEveryAxis) {
  Tensor x = random::normal({3, 5, 7}, 0, 3, uint64_t{21});
  Tensor g = random::normal({3, 5, 7}, 0, 1, uint64_t{22});
  for (bool log : {false, true}) {
    for (int axis = 0; axis < 3; ++axis) {
      std::string what = std::string(log ? "log_softmax" : "softmax") + " axis " + std::to_string(axis);
      Tensor y = log ? ops::log_softmax(x, axis) : ops::softmax(x, axis);
      Tensor ref = Tensor::empty(x.shape());
      cpu::softmax_forward_reference(x, ref, axis, log);
      expect_close(y, ref, 1e-5, what);
      Tensor dx = run_op(log ? "log_softmax_grad" : "softmax_grad", {g, ref}, {{"axis", int64_t{axis - 3}}})[0];
      Tensor dref = Tensor::empty(x.shape());
      cpu::softmax_backward_reference(g, ref, dref, axis, log);
      expect_close(dx, dref, 1e-5, what + " backward");
    }
  }
}

TEST(Softmax, Gradients) {
  Tensor x = random::normal({3, 4}, 0, 2, uint64_t{23}, DType::float64);
  for (int axis : {-1, 0}) {
    keras::testing::check_gradients("softmax", [&](const TensorList& in) { return ops::softmax(in[0], axis); }, {x});
    keras::testing::check_gradients("log_softmax", [&](const TensorList& in) { return ops::log_softmax(in[0], axis); }, {x});
    Tensor x32 = x.astype(DType::float32);
    keras::testing::check_gradients("softmax f32", [&](const TensorList& in) { return ops::softmax(in[0], axis); }, {x32});
    keras::testing::check_gradients("log_softmax f32", [&](const TensorList& in) { return ops::log_softmax(in[0], axis); }, {x32});
  }
}

TEST(Softmax, StableForLargeLogits) {
  for (DType dtype : {DType::float32, DType::float64}) {
    Tensor x = Tensor::from_vector(std::vector<double>{1000, 0, -1000}).astype(dtype);
    auto l = ops::log_softmax(x).to_vector<double>();
    EXPECT_NEAR(l[0], 0, 1e-5);  // float32 rounding of 1000 - logsumexp
    EXPECT_NEAR(l[1], -1000, 1e-3);
    EXPECT_NEAR(l[2], -2000, 1e-3);
    auto s = ops::softmax(x).to_vector<double>();
    EXPECT_NEAR(s[0], 1, 1e-6);
    EXPECT_EQ(s[2], 0);
    for (double v : l) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(ActivationLookup, NamesAndErrors) {
  Tensor x = Tensor::from_vector(std::vector<float>{-1, 0.5, 2});
  EXPECT_EQ(ops::activation("swish", x).to_vector<float>(), ops::silu(x).to_vector<float>());
  EXPECT_EQ(ops::activation("relu", x).to_vector<float>(), (std::vector<float>{0, 0.5, 2}));
  EXPECT_TRUE(ops::activation("linear", x).same(x));
  for (const std::string& name : ops::activation_names()) {
    EXPECT_TRUE(ops::is_activation(name));
    EXPECT_EQ(ops::activation(name, x).shape(), x.shape()) << name;
  }
  EXPECT_EQ(ops::activation("hard_swish", x).to_vector<float>(), ops::hard_silu(x).to_vector<float>());
  EXPECT_EQ(ops::activation_names().size(), 19u);
  EXPECT_FALSE(ops::is_activation("relu7"));
  try {
    ops::activation("relu7", x);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("relu7"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hard_sigmoid"), std::string::npos) << msg;
  }
  EXPECT_THROW(ops::relu(Tensor::full({2}, 1, DType::int64)), TypeError);
}

TEST(Activations, SecondCallCreatesNoPrimitive) {
  Tensor x = random::normal({3, 5}, 0, 1, uint64_t{31});
  auto run = [&] {
    Tensor w = x.clone().set_requires_grad(true);
    GradientTape tape;
    Tensor y = ops::log_softmax(ops::gelu(ops::sigmoid(ops::relu(w))), 0);
    tape.gradient(y, {w});
  };
  run();
  auto before = cpu_primitive_cache_stats();
  run();
  auto after = cpu_primitive_cache_stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_GT(after.hits, before.hits);
}

TEST(Dropout, RateZeroIsIdentity) {
  Generator gen(1);
  Tensor x = random::normal({4, 5}, 0, 1, uint64_t{41});
  EXPECT_TRUE(ops::dropout(x, 0.0, gen).same(x));
}

TEST(Dropout, DeterministicPerSeedAndKeptFraction) {
  Tensor x = Tensor::ones({100, 100});
  Generator g1(5), g2(5), g3(6);
  auto a = ops::dropout(x, 0.3, g1).to_vector<float>();
  EXPECT_EQ(a, ops::dropout(x, 0.3, g2).to_vector<float>());
  EXPECT_NE(a, ops::dropout(x, 0.3, g3).to_vector<float>());
  EXPECT_NE(a, ops::dropout(x, 0.3, g1).to_vector<float>());  // the stream advanced
  int64_t kept = 0;
  for (float v : a) {
    if (v != 0) {
      ++kept;
      EXPECT_FLOAT_EQ(v, 1 / 0.7f);
    }
  }
  EXPECT_NEAR(kept / 10000.0, 0.7, 0.02);
}

TEST(Dropout, IndependentOfThreadCount) {
  Tensor x = Tensor::ones({300, 300});
  int threads = num_threads();
  set_num_threads(1);
  Generator g1(9);
  auto one = ops::dropout(x, 0.5, g1).to_vector<float>();
  set_num_threads(2);
  Generator g2(9);
  auto two = ops::dropout(x, 0.5, g2).to_vector<float>();
  set_num_threads(threads);
  EXPECT_EQ(one, two);
}

TEST(Dropout, GradientIsScaledMask) {
  Tensor x = random::normal({6, 7}, 0, 1, uint64_t{43}, DType::float64);
  keras::testing::check_gradients("dropout", [](const TensorList& in) {
    Generator gen(77);  // the same mask on every evaluation
    return ops::dropout(in[0], 0.4, gen);
  }, {x});
  Tensor w = x.clone().set_requires_grad(true);
  Generator gen(3);
  GradientTape tape;
  Tensor y = ops::dropout(w, 0.4, gen);
  Tensor dx = tape.gradient(y, {w})[0];
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_NEAR(element_as_double(dx, i), element_as_double(y, i) == 0 ? 0 : 1 / 0.6, 1e-12);
}

TEST(Dropout, RateOutOfRange) {
  Generator gen(1);
  Tensor x = Tensor::ones({3});
  EXPECT_THROW(ops::dropout(x, 1.0, gen), ValueError);
  EXPECT_THROW(ops::dropout(x, -0.1, gen), ValueError);
  EXPECT_THROW(ops::dropout(x, std::nan(""), gen), ValueError);
  EXPECT_THROW(ops::dropout(Tensor::full({3}, 1, DType::int32), 0.5, gen), TypeError);
}
