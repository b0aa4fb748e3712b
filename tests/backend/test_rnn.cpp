// The fused recurrent op: float64 central-difference gradient checks of the plain-loop kernels for
// every kind and option (masks, go_backwards, zero_output_for_mask, non-default activations),
// the oneDNN float32 kernels against the plain loops forward and backward (every gradient),
// which path a call takes, the primitive cache staying warm, and argument errors.
// Agreement with real Keras is test_rnn_keras.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/autodiff.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/ops.h"
#include "backend/ops_rnn.h"
#include "backend/random.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

using namespace keras;
using ops::RnnKind;

namespace {

struct Case {
  std::string name;
  RnnKind kind;
  bool reset_after = true;
  bool go_backwards = false;
  bool masked = false;
  bool zero_output_for_mask = false;
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
};

// Row 1 starts masked, row 2 is masked throughout (its outputs and states never change).
Tensor test_mask(int64_t batch, int64_t time) {
  std::vector<uint8_t> pattern{1, 1, 0, 1, 1, 0, 1, 1, 0, 0};
  std::vector<bool> v;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t) v.push_back(b == 2 ? false : pattern[static_cast<size_t>((b * 5 + t) % 10)] != 0);
  Tensor m = Tensor::empty({batch, time}, DType::boolean);
  for (size_t i = 0; i < v.size(); ++i) m.data<bool>()[i] = v[i];
  return m;
}

struct Problem {
  int64_t batch, time, input, units;
};

// Inputs x, kernel, recurrent_kernel, bias, h0 [, c0] of a case, random, in `dtype`.
TensorList random_inputs(const Case& c, const Problem& p, DType dtype, uint64_t seed) {
  int64_t g = ops::rnn_gate_count(c.kind), gu = g * p.units;
  Shape bias = c.kind == RnnKind::gru && c.reset_after ? Shape{2, gu} : Shape{gu};
  TensorList in{random::normal({p.batch, p.time, p.input}, 0, 1, seed, dtype),
                random::normal({p.input, gu}, 0, 0.5, seed + 1, dtype),
                random::normal({p.units, gu}, 0, 0.5, seed + 2, dtype), random::normal(bias, 0, 0.5, seed + 3, dtype),
                random::normal({p.batch, p.units}, 0, 0.5, seed + 4, dtype)};
  if (c.kind == RnnKind::lstm) in.push_back(random::normal({p.batch, p.units}, 0, 0.5, seed + 5, dtype));
  return in;
}

ops::RnnSequenceArgs args_of(const Case& c, const TensorList& in, const Tensor& mask, const std::string& impl) {
  ops::RnnSequenceArgs a;
  a.kind = c.kind, a.reset_after = c.reset_after, a.go_backwards = c.go_backwards;
  a.zero_output_for_mask = c.zero_output_for_mask;
  a.activation = c.activation, a.recurrent_activation = c.recurrent_activation;
  a.x = in[0], a.kernel = in[1], a.recurrent_kernel = in[2], a.bias = in[3], a.initial_h = in[4];
  if (in.size() > 5) a.initial_c = in[5];
  if (c.masked) a.mask = mask;
  a.implementation = impl;
  return a;
}

// Every output of the op in one (batch, time*units + states*units) tensor.
Tensor joined(const TensorList& out) {
  TensorList parts{ops::reshape(out[0], {out[0].dim(0), -1})};
  for (size_t i = 1; i < out.size(); ++i) parts.push_back(out[i]);
  return ops::concatenate(parts, 1);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  if (a.shape() != b.shape()) return 1e300;
  Tensor ac = a.contiguous(), bc = b.contiguous();
  double m = 0;
  for (int64_t i = 0; i < ac.numel(); ++i) m = std::max(m, std::abs(element_as_double(ac, i) - element_as_double(bc, i)));
  return m;
}

std::vector<Case> gradient_cases() {
  return {
      {"lstm", RnnKind::lstm},
      {"lstm backwards masked", RnnKind::lstm, true, true, true},
      {"lstm masked zero output", RnnKind::lstm, true, false, true, true},
      {"lstm selu hard_sigmoid", RnnKind::lstm, true, false, false, false, "selu", "hard_sigmoid"},
      {"gru reset_after", RnnKind::gru},
      {"gru reset_after backwards masked", RnnKind::gru, true, true, true},
      {"gru reset_before", RnnKind::gru, false},
      {"gru reset_before masked zero output backwards", RnnKind::gru, false, true, true, true},
      {"gru softsign softplus", RnnKind::gru, true, false, true, false, "softsign", "softplus"},
      {"simple_rnn", RnnKind::simple_rnn},
      {"simple_rnn relu backwards masked", RnnKind::simple_rnn, true, true, true, false, "relu"},
      {"simple_rnn swish masked zero output", RnnKind::simple_rnn, true, false, true, true, "swish"},
      {"simple_rnn linear", RnnKind::simple_rnn, true, false, false, false, "linear"},
  };
}

TEST(RnnReference, Float64GradientsOfEveryKindAndOption) {
  Problem p{3, 4, 3, 3};
  Tensor mask = test_mask(p.batch, p.time);
  for (const Case& c : gradient_cases()) {
    SCOPED_TRACE(c.name);
    TensorList in = random_inputs(c, p, DType::float64, 11);
    keras::testing::check_gradients(c.name, [&](const TensorList& xs) {
      return joined(ops::rnn_sequence(args_of(c, xs, mask, "reference")));
    }, in);
  }
}

TEST(RnnReference, Float32MatchesFloat64) {
  Problem p{3, 5, 4, 5};
  Tensor mask = test_mask(p.batch, p.time);
  for (const Case& c : gradient_cases()) {
    SCOPED_TRACE(c.name);
    TensorList in64 = random_inputs(c, p, DType::float64, 5), in32;
    for (const auto& t : in64) in32.push_back(t.astype(DType::float32));
    Tensor y64 = joined(ops::rnn_sequence(args_of(c, in64, mask, "reference")));
    Tensor y32 = joined(ops::rnn_sequence(args_of(c, in32, mask, "reference")));
    EXPECT_LT(max_abs_diff(y32.astype(DType::float64), y64), 1e-5);
  }
}

// Masked steps keep the states; their outputs are the previous output (zeros before the first
// valid step, whatever the initial state) or zeros with zero_output_for_mask.
TEST(RnnReference, MaskedStepsCarryStatesAndOutputs) {
  Problem p{3, 5, 2, 3};
  Tensor mask = test_mask(p.batch, p.time);
  for (bool zero : {false, true}) {
    Case c{"lstm", RnnKind::lstm, true, false, true, zero};
    TensorList in = random_inputs(c, p, DType::float64, 3);
    TensorList out = ops::rnn_sequence(args_of(c, in, mask, "reference"));
    auto y = [&](int64_t b, int64_t t, int64_t u) { return element_as_double(out[0], (b * p.time + t) * p.units + u); };
    for (int64_t u = 0; u < p.units; ++u) {
      // Row 2 is masked throughout: zero outputs, initial states out.
      for (int64_t t = 0; t < p.time; ++t) EXPECT_EQ(y(2, t, u), 0.0);
      EXPECT_EQ(element_as_double(out[1], 2 * p.units + u), element_as_double(in[4], 2 * p.units + u));
      EXPECT_EQ(element_as_double(out[2], 2 * p.units + u), element_as_double(in[5], 2 * p.units + u));
      // Row 0, step 2 is masked: step 1's output again, or zeros.
      EXPECT_EQ(y(0, 2, u), zero ? 0.0 : y(0, 1, u));
      EXPECT_NE(y(0, 1, u), 0.0);
    }
  }
}

// go_backwards reads the sequence from its end and returns outputs in processed order: the same
// as running forwards on the time-reversed input (and mask).
TEST(RnnReference, GoBackwardsIsForwardOnReversedInput) {
  Problem p{3, 5, 2, 4};
  Tensor mask = test_mask(p.batch, p.time);
  auto reversed = [](const Tensor& t) {
    Tensor r = t.clone();
    int64_t b = t.dim(0), n = t.dim(1), inner = t.numel() / (b * n), size = static_cast<int64_t>(dtype_size(t.dtype()));
    for (int64_t i = 0; i < b; ++i)
      for (int64_t s = 0; s < n; ++s)
        std::memcpy(static_cast<char*>(r.raw_data()) + ((i * n + s) * inner) * size,
                    static_cast<const char*>(t.raw_data()) + ((i * n + n - 1 - s) * inner) * size,
                    static_cast<size_t>(inner * size));
    return r;
  };
  for (RnnKind kind : {RnnKind::lstm, RnnKind::gru, RnnKind::simple_rnn}) {
    Case back{"backwards", kind, true, true, true}, fwd{"forwards", kind, true, false, true};
    TensorList in = random_inputs(back, p, DType::float64, 9);
    TensorList in_rev = in;
    in_rev[0] = reversed(in[0]);
    Tensor a = joined(ops::rnn_sequence(args_of(back, in, mask, "reference")));
    Tensor b = joined(ops::rnn_sequence(args_of(fwd, in_rev, reversed(mask), "reference")));
    EXPECT_EQ(max_abs_diff(a, b), 0.0) << ops::rnn_kind_name(kind);
  }
}

std::vector<Case> onednn_cases() {
  std::vector<Case> cases;
  for (bool back : {false, true}) {
    std::string dir = back ? " backwards" : "";
    cases.push_back({"lstm" + dir, RnnKind::lstm, true, back});
    cases.push_back({"gru reset_after" + dir, RnnKind::gru, true, back});
    cases.push_back({"gru reset_before" + dir, RnnKind::gru, false, back});
    for (std::string act : {"tanh", "relu", "sigmoid"})
      cases.push_back({"simple_rnn " + act + dir, RnnKind::simple_rnn, true, back, false, false, act});
  }
  return cases;
}

TEST(RnnOneDnn, MatchesReferenceForwardAndEveryGradient) {
  Problem p{3, 6, 5, 7};
  for (const Case& c : onednn_cases()) {
    SCOPED_TRACE(c.name);
    TensorList in = random_inputs(c, p, DType::float32, 21);
    ASSERT_TRUE(ops::rnn_sequence_uses_onednn(args_of(c, in, {}, "auto")));
    Tensor proj = random::normal({p.batch, (p.time + static_cast<int64_t>(in.size()) - 4) * p.units}, 0, 1, 3);
    std::vector<TensorList> outs, grads;
    for (std::string impl : {"onednn", "reference"}) {
      for (auto& t : in) t.set_requires_grad(true);
      GradientTape tape;
      TensorList out = ops::rnn_sequence(args_of(c, in, {}, impl));
      grads.push_back(compute_gradients(joined(out), in, proj));
      outs.push_back(out);
      for (auto& t : in) t.set_requires_grad(false);
    }
    for (size_t i = 0; i < outs[0].size(); ++i) EXPECT_LT(max_abs_diff(outs[0][i], outs[1][i]), 2e-5) << "output " << i;
    const char* names[] = {"x", "kernel", "recurrent_kernel", "bias", "initial_h", "initial_c"};
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_TRUE(grads[0][i].defined()) << names[i];
      EXPECT_LT(max_abs_diff(grads[0][i], grads[1][i]), 1e-4) << "gradient of " << names[i];
    }
  }
}

TEST(RnnOneDnn, InferenceMatchesTrainingForward) {
  Problem p{2, 4, 3, 5};
  Case c{"lstm", RnnKind::lstm};
  TensorList in = random_inputs(c, p, DType::float32, 8);
  Tensor inference = joined(ops::rnn_sequence(args_of(c, in, {}, "onednn")));
  for (auto& t : in) t.set_requires_grad(true);
  GradientTape tape;
  Tensor training = joined(ops::rnn_sequence(args_of(c, in, {}, "onednn")));
  EXPECT_LT(max_abs_diff(inference, training), 1e-6);
}

TEST(RnnOneDnn, WhichPathRuns) {
  Problem p{2, 3, 2, 4};
  Case lstm{"lstm", RnnKind::lstm};
  TensorList in = random_inputs(lstm, p, DType::float32, 1);
  Tensor mask = test_mask(p.batch, p.time);
  EXPECT_TRUE(ops::rnn_sequence_uses_onednn(args_of(lstm, in, {}, "auto")));
  EXPECT_FALSE(ops::rnn_sequence_uses_onednn(args_of(lstm, in, {}, "reference")));
  Case masked = lstm;
  masked.masked = true;
  EXPECT_FALSE(ops::rnn_sequence_uses_onednn(args_of(masked, in, mask, "auto")));
  Case relu = lstm;
  relu.activation = "relu";
  EXPECT_FALSE(ops::rnn_sequence_uses_onednn(args_of(relu, in, {}, "auto")));
  Case selu{"rnn", RnnKind::simple_rnn, true, false, false, false, "selu"};
  TensorList in_rnn = random_inputs(selu, p, DType::float32, 1);
  EXPECT_FALSE(ops::rnn_sequence_uses_onednn(args_of(selu, in_rnn, {}, "auto")));
  TensorList in64 = random_inputs(lstm, p, DType::float64, 1);
  EXPECT_FALSE(ops::rnn_sequence_uses_onednn(args_of(lstm, in64, {}, "auto")));
  keras::testing::expect_error<NotImplementedError>([&] { ops::rnn_sequence(args_of(masked, in, mask, "onednn")); },
                                             {"rnn_sequence (oneDNN)", "with a mask", "'auto' or 'reference'"});
}

TEST(RnnOneDnn, SecondTrainingStepCreatesNoPrimitive) {
  Problem p{2, 5, 3, 9};
  Case c{"gru", RnnKind::gru};
  TensorList in = random_inputs(c, p, DType::float32, 4);
  for (auto& t : in) t.set_requires_grad(true);
  auto step = [&] {
    GradientTape tape;
    compute_gradients(ops::sum(joined(ops::rnn_sequence(args_of(c, in, {}, "onednn")))), in);
  };
  step();
  uint64_t misses = cpu_primitive_cache_stats().misses;
  step();
  EXPECT_EQ(cpu_primitive_cache_stats().misses, misses);
}

TEST(RnnSequence, UndefinedBiasAndStatesAreZeros) {
  Problem p{2, 3, 2, 3};
  for (const std::string impl : {"reference", "onednn"}) {
    Case c{"lstm", RnnKind::lstm};
    TensorList in = random_inputs(c, p, DType::float32, 2);
    TensorList zeros = in;
    for (size_t i : {3, 4, 5}) zeros[i] = Tensor::zeros(in[i].shape(), DType::float32);
    ops::RnnSequenceArgs a = args_of(c, in, {}, impl);
    a.bias = a.initial_h = a.initial_c = Tensor();
    EXPECT_EQ(max_abs_diff(joined(ops::rnn_sequence(a)), joined(ops::rnn_sequence(args_of(c, zeros, {}, impl)))), 0.0);
  }
}

// Zero steps: an empty sequence, the initial states out, their gradients passed straight back.
TEST(RnnSequence, ZeroStepsReturnTheInitialStates) {
  for (DType dtype : {DType::float32, DType::float64}) {
    Case c{"lstm", RnnKind::lstm};
    TensorList in = random_inputs(c, Problem{2, 0, 3, 4}, dtype, 6);
    ops::RnnSequenceArgs a = args_of(c, in, {}, "auto");
    EXPECT_FALSE(ops::rnn_sequence_uses_onednn(a));
    for (auto& t : in) t.set_requires_grad(true);
    GradientTape tape;
    TensorList out = ops::rnn_sequence(args_of(c, in, {}, "auto"));
    EXPECT_EQ(shape_str(out[0].shape()), "(2, 0, 4)");
    EXPECT_EQ(max_abs_diff(out[1], in[4]), 0.0);
    EXPECT_EQ(max_abs_diff(out[2], in[5]), 0.0);
    TensorList g = compute_gradients(ops::sum(ops::add(out[1], out[2])), in);
    EXPECT_EQ(max_abs_diff(g[4], Tensor::ones({2, 4}, dtype)), 0.0);
    EXPECT_EQ(max_abs_diff(g[1], Tensor::zeros(in[1].shape(), dtype)), 0.0);
  }
}

TEST(RnnSequence, BadArgumentsNameTheArgument) {
  using keras::testing::expect_error;
  Problem p{2, 3, 4, 5};
  Case c{"lstm", RnnKind::lstm};
  TensorList in = random_inputs(c, p, DType::float32, 2);
  auto with = [&](auto change) {
    ops::RnnSequenceArgs a = args_of(c, in, {}, "auto");
    change(a);
    return [a] { ops::rnn_sequence(a); };
  };
  expect_error<ShapeError>(with([](auto& a) { a.kernel = Tensor::zeros({3, 20}); }), {"rnn_sequence", "kernel", "(4, 20)", "(3, 20)"});
  expect_error<ShapeError>(with([](auto& a) { a.recurrent_kernel = Tensor::zeros({5, 15}); }), {"recurrent_kernel", "(5, 15)"});
  expect_error<ShapeError>(with([](auto& a) { a.bias = Tensor::zeros({2, 20}); }), {"bias", "(20,)", "(2, 20)"});
  expect_error<ShapeError>(with([](auto& a) { a.initial_h = Tensor::zeros({3, 5}); }), {"initial_h", "(2, 5)", "(3, 5)"});
  expect_error<ShapeError>(with([](auto& a) { a.initial_c = Tensor::zeros({2, 4}); }), {"initial_c", "(2, 4)"});
  expect_error<ShapeError>(with([](auto& a) { a.mask = Tensor::zeros({2, 4}, DType::boolean); }), {"mask", "(2, 3)", "(2, 4)"});
  expect_error<TypeError>(with([](auto& a) { a.mask = Tensor::zeros({2, 3}); }), {"boolean mask", "float32"});
  expect_error<ShapeError>(with([](auto& a) { a.x = Tensor::zeros({2, 4}); }), {"x of rank 3", "(2, 4)"});
  expect_error<TypeError>(with([](auto& a) { a.kernel = a.kernel.astype(DType::float64); }), {"one dtype"});
  expect_error<ValueError>(with([](auto& a) { a.activation = "softmax"; }), {"elementwise", "'softmax'"});
  expect_error<ValueError>(with([](auto& a) { a.recurrent_activation = "nope"; }), {"'nope'"});
  expect_error<ValueError>(with([](auto& a) { a.implementation = "cudnn"; }), {"implementation", "'cudnn'"});
  Case g{"gru", RnnKind::gru};
  TensorList gin = random_inputs(g, p, DType::float32, 2);
  ops::RnnSequenceArgs ga = args_of(g, gin, {}, "auto");
  ga.bias = Tensor::zeros({15});
  expect_error<ShapeError>([&] { ops::rnn_sequence(ga); }, {"bias", "(2, 15)", "reset_after"});
  ga = args_of(g, gin, {}, "auto");
  ga.initial_c = Tensor::zeros({2, 5});
  expect_error<ValueError>([&] { ops::rnn_sequence(ga); }, {"initial_c", "gru"});
}

}  // namespace
