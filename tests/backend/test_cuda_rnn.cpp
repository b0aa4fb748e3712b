// The fused recurrent op on CUDA (backend/cuda/rnn_ops.cpp) against the CPU plain loops
// (implementation "reference"): outputs, final states and every gradient, for LSTM, GRU
// (reset_after both ways) and SimpleRNN (tanh, relu, and other activation pairs), with and
// without a mask (gaps, a row masked throughout, zero_output_for_mask), go_backwards, initial
// states given and not, batch 1 and 5, units 7 and 64, 1 and 9 steps, float32 and float64.
// Tolerance: relative to the result's scale, 1e-5 for float32 and 1e-10 for float64 (on an H100
// the worst seen over every case was 6.1e-7 and 2.9e-14: cuBLAS sums in another order than the
// CPU's GEMMs, and CUDA's tanhf/expf differ from glibc's by an ulp or two).
// Every test skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/autodiff.h"
#include "backend/cuda.h"
#include "backend/ops.h"
#include "backend/ops_rnn.h"
#include "backend/random.h"
#include "support/cuda_test.h"

using namespace keras;
using ops::RnnKind;


namespace {

struct Case {
  std::string name;
  RnnKind kind;
  bool reset_after = true;
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
};

struct Variant {
  int64_t batch = 5, time = 9, units = 7;
  bool masked = false, go_backwards = false, zero_output_for_mask = false, initial_states = true;
  DType dtype = DType::float32;
  std::string str() const {
    return "B" + std::to_string(batch) + " T" + std::to_string(time) + " U" + std::to_string(units) +
           (masked ? " masked" : "") + (go_backwards ? " backwards" : "") + (zero_output_for_mask ? " zero_out" : "") +
           (initial_states ? " h0" : "") + " " + dtype_name(dtype);
  }
};

constexpr int64_t kInput = 6;

// Gaps in every row; row 2 masked throughout; row 0 starts masked (previous output = zeros).
Tensor test_mask(int64_t batch, int64_t time) {
  Tensor m = Tensor::empty({batch, time}, DType::boolean);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t) m.data<bool>()[b * time + t] = b != 2 && (b * 3 + t) % 4 != 0;
  return m;
}

// x, kernel, recurrent_kernel, bias [, h0 [, c0]] on the CPU.
TensorList random_inputs(const Case& c, const Variant& v, uint64_t seed) {
  int64_t gu = ops::rnn_gate_count(c.kind) * v.units;
  Shape bias = c.kind == RnnKind::gru && c.reset_after ? Shape{2, gu} : Shape{gu};
  double scale = 1.0 / std::sqrt(static_cast<double>(v.units));  // keeps 64-unit states unsaturated
  TensorList in{random::normal({v.batch, v.time, kInput}, 0, 1, seed, v.dtype),
                random::normal({kInput, gu}, 0, 0.5, seed + 1, v.dtype),
                random::normal({v.units, gu}, 0, scale, seed + 2, v.dtype),
                random::normal(bias, 0, 0.5, seed + 3, v.dtype)};
  if (v.initial_states) {
    in.push_back(random::normal({v.batch, v.units}, 0, 0.5, seed + 4, v.dtype));
    if (c.kind == RnnKind::lstm) in.push_back(random::normal({v.batch, v.units}, 0, 0.5, seed + 5, v.dtype));
  }
  return in;
}

ops::RnnSequenceArgs args_of(const Case& c, const Variant& v, const TensorList& in, const Tensor& mask) {
  ops::RnnSequenceArgs a;
  a.kind = c.kind, a.reset_after = c.reset_after, a.go_backwards = v.go_backwards;
  a.zero_output_for_mask = v.zero_output_for_mask;
  a.activation = c.activation, a.recurrent_activation = c.recurrent_activation;
  a.x = in[0], a.kernel = in[1], a.recurrent_kernel = in[2], a.bias = in[3];
  if (in.size() > 4) a.initial_h = in[4];
  if (in.size() > 5) a.initial_c = in[5];
  if (v.masked) a.mask = mask;
  a.implementation = "reference";
  return a;
}

// max |got - want| / max(1, max |want|); NaN where one side has NaN and the other not.
double rel_err(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(shape_str(got.shape()), shape_str(want.shape()));
  if (got.shape() != want.shape()) return 1e300;
  std::vector<double> g = got.to(Device::cpu()).to_vector<double>(), w = want.to(Device::cpu()).to_vector<double>();
  double diff = 0, scale = 1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) != std::isnan(g[i])) return 1e300;
    if (std::isnan(w[i])) continue;
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / scale;
}

// Outputs and the gradients of a loss that weighs every output differently, on `device`.
TensorList run(const Case& c, const Variant& v, Device device) {
  TensorList in = random_inputs(c, v, 17);
  for (Tensor& t : in) t = t.to(device).set_requires_grad(true);
  Tensor mask = test_mask(v.batch, v.time).to(device);
  GradientTape tape;  // the ops record only under a tape
  TensorList out = ops::rnn_sequence(args_of(c, v, in, mask));
  Tensor loss;
  for (size_t i = 0; i < out.size(); ++i) {
    Tensor w = random::normal(out[i].shape(), 0, 1, 100 + i, v.dtype).to(device);
    Tensor term = ops::sum(ops::multiply(out[i], w));
    loss = loss.defined() ? ops::add(loss, term) : term;
  }
  TensorList grads = tape.gradient(loss, in);
  for (Tensor& g : grads) out.push_back(g);
  return out;
}

// The worst relative error seen per dtype, printed at the end (what the tolerances rest on).
double worst_error[2] = {0, 0};

class ReportWorst : public ::testing::Environment {
 public:
  void TearDown() override {
    if (cuda::device_count() > 0)
      std::printf("worst relative error: float32 %.3g, float64 %.3g\n", worst_error[0], worst_error[1]);
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportWorst);

void expect_match(const Case& c, const Variant& v) {
  SCOPED_TRACE(c.name + " " + v.str());
  TensorList want = run(c, v, Device::cpu()), got = run(c, v, Device::cuda(0));
  ASSERT_EQ(want.size(), got.size());
  const double tol = v.dtype == DType::float64 ? 1e-10 : 1e-5;
  const size_t n_out = c.kind == RnnKind::lstm ? 3 : 2;
  const std::vector<std::string> grad_names{"dx", "dkernel", "drecurrent_kernel", "dbias", "dh0", "dc0"};
  for (size_t i = 0; i < want.size(); ++i) {
    std::string what = i < n_out ? "output " + std::to_string(i) : grad_names[i - n_out];
    ASSERT_TRUE(want[i].defined()) << what;
    ASSERT_TRUE(got[i].defined()) << what << " undefined on CUDA";
    EXPECT_EQ(got[i].device(), Device::cuda(0)) << what;
    const double err = rel_err(got[i], want[i]);
    double& worst = worst_error[v.dtype == DType::float64 ? 1 : 0];
    worst = std::max(worst, err);
    EXPECT_LE(err, tol) << what;
  }
}

std::vector<Case> cases() {
  return {{"lstm", RnnKind::lstm},
          {"gru_reset_after", RnnKind::gru, true},
          {"gru_reset_before", RnnKind::gru, false},
          {"simple_rnn_tanh", RnnKind::simple_rnn},
          {"simple_rnn_relu", RnnKind::simple_rnn, true, "relu"}};
}

class CudaRnn : public ::testing::TestWithParam<Case> {};

TEST_P(CudaRnn, MatchesCpuOnEveryOption) {
  REQUIRE_CUDA();
  const Case& c = GetParam();
  for (DType dt : {DType::float32, DType::float64}) {
    Variant v;
    v.dtype = dt;
    expect_match(c, v);  // B5 T9 U7, initial states, no mask
    v.masked = true;
    expect_match(c, v);
    v.go_backwards = true;
    expect_match(c, v);
    v.zero_output_for_mask = true, v.initial_states = false;
    expect_match(c, v);
    v.masked = false, v.zero_output_for_mask = false;
    expect_match(c, v);  // go_backwards without a mask, zero initial states
  }
}

TEST_P(CudaRnn, MatchesCpuOnEveryShape) {
  REQUIRE_CUDA();
  const Case& c = GetParam();
  for (DType dt : {DType::float32, DType::float64})
    for (int64_t batch : {1, 5})
      for (int64_t time : {1, 9})
        for (int64_t units : {7, 64}) {
          Variant v;
          v.batch = batch, v.time = time, v.units = units, v.dtype = dt;
          v.masked = time > 1;
          expect_match(c, v);
        }
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaRnn, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Every elementwise activation the CPU plain loops run, as activation and recurrent activation.
TEST(CudaRnnActivations, EveryActivationPairMatchesCpu) {
  REQUIRE_CUDA();
  const std::vector<std::string> acts{"linear", "relu", "leaky_relu", "relu6", "elu", "selu",
                                      "gelu", "silu", "swish", "sigmoid", "hard_sigmoid", "hard_silu",
                                      "hard_swish", "tanh", "softplus", "softsign", "exponential"};
  for (const std::string& a : acts) {
    Variant v;
    v.dtype = DType::float64, v.masked = true, v.time = 4;
    expect_match({"lstm " + a, RnnKind::lstm, true, "tanh", a}, v);
    expect_match({"lstm act " + a, RnnKind::lstm, true, a, "sigmoid"}, v);
    expect_match({"gru " + a, RnnKind::gru, true, a, a}, v);
    expect_match({"gru before " + a, RnnKind::gru, false, a, "hard_sigmoid"}, v);
    expect_match({"simple_rnn " + a, RnnKind::simple_rnn, true, a}, v);
  }
}

TEST(CudaRnnEdges, EmptyTimeAndBatch) {
  REQUIRE_CUDA();
  for (const Case& c : cases()) {
    Variant v;
    v.dtype = DType::float64;
    v.time = 0;
    expect_match(c, v);
    v.time = 3, v.batch = 0;
    TensorList in = random_inputs(c, v, 3);
    for (Tensor& t : in) t = t.to(Device::cuda(0));
    TensorList out = ops::rnn_sequence(args_of(c, v, in, Tensor()));
    EXPECT_EQ(shape_str(out[0].shape()), shape_str(Shape{0, 3, v.units})) << c.name;
  }
}

TEST(CudaRnnEdges, OneDnnImplementationIsNotImplemented) {
  REQUIRE_CUDA();
  Case c{"lstm", RnnKind::lstm};
  Variant v;
  TensorList in = random_inputs(c, v, 3);
  for (Tensor& t : in) t = t.to(Device::cuda(0));
  ops::RnnSequenceArgs a = args_of(c, v, in, Tensor());
  a.implementation = "onednn";
  EXPECT_THROW(ops::rnn_sequence(a), NotImplementedError);
}

}  // namespace
