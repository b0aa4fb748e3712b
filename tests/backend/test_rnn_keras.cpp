// ops::rnn_sequence against numbers made by real Keras 3 (tests/data/keras/make_rnn_reference.py):
// LSTM, GRU (reset_after True and False) and SimpleRNN layers with masks, go_backwards, initial
// states, zero_output_for_mask and non-default activations. Outputs, final states and the
// gradients TensorFlow computes of sum(outputs * P) + sum(states * Q) must agree, for the
// float64 plain loops, the float32 plain loops and the float32 default path (oneDNN where the
// case allows it).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/ops_rnn.h"

using namespace keras;
using nlohmann::json;

namespace {

json load_reference() {
  std::ifstream in(std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/rnn_reference.json");
  if (!in) ADD_FAILURE() << "missing tests/data/keras/rnn_reference.json (run make_rnn_reference.py)";
  return in ? json::parse(in) : json();
}

void flatten(const json& j, std::vector<double>& values, Shape& shape, size_t depth) {
  if (!j.is_array()) {
    values.push_back(j.is_boolean() ? double(j.get<bool>()) : j.get<double>());
    return;
  }
  if (shape.size() == depth) shape.push_back(static_cast<int64_t>(j.size()));
  for (const auto& e : j) flatten(e, values, shape, depth + 1);
}

Tensor tensor_of(const json& j, DType dtype) {
  std::vector<double> values;
  Shape shape;
  flatten(j, values, shape, 0);
  return Tensor::from_vector(values, shape).astype(dtype);
}

Tensor mask_of(const json& j) {
  if (j.is_null()) return {};
  std::vector<double> values;
  Shape shape;
  flatten(j, values, shape, 0);
  Tensor m = Tensor::empty(shape, DType::boolean);
  for (size_t i = 0; i < values.size(); ++i) m.data<bool>()[i] = values[i] != 0;
  return m;
}

ops::RnnKind kind_of(const std::string& name) {
  if (name == "lstm") return ops::RnnKind::lstm;
  if (name == "gru") return ops::RnnKind::gru;
  return ops::RnnKind::simple_rnn;
}

// |ours - keras| <= tol * (1 + |keras|) everywhere; reports the worst element.
void expect_close(const Tensor& ours, const json& keras, double tol, const std::string& what) {
  Tensor want = tensor_of(keras, DType::float64);
  ASSERT_EQ(shape_str(ours.shape()), shape_str(want.shape())) << what;
  Tensor got = ours.astype(DType::float64).contiguous();
  double worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double w = element_as_double(want, i), e = std::abs(element_as_double(got, i) - w) / (1 + std::abs(w));
    if (e > worst) worst = e, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << element_as_double(got, at) << ", Keras "
                        << element_as_double(want, at);
}

Tensor joined(const TensorList& parts3d_then_2d) {
  TensorList parts{ops::reshape(parts3d_then_2d[0], {parts3d_then_2d[0].dim(0), -1})};
  for (size_t i = 1; i < parts3d_then_2d.size(); ++i) parts.push_back(parts3d_then_2d[i]);
  return ops::concatenate(parts, 1);
}

int onednn_cases = 0;

void check_case(const json& c, DType dtype, const std::string& impl, double tol) {
  const std::string name = c["name"].get<std::string>() + " (" + dtype_name(dtype) + ", " + impl + ")";
  SCOPED_TRACE(name);
  ops::RnnSequenceArgs a;
  a.kind = kind_of(c["kind"]);
  a.activation = c["activation"], a.recurrent_activation = c["recurrent_activation"];
  a.reset_after = c["reset_after"], a.go_backwards = c["go_backwards"];
  a.zero_output_for_mask = c["zero_output_for_mask"];
  a.implementation = impl;
  TensorList sources{tensor_of(c["x"], dtype), tensor_of(c["kernel"], dtype), tensor_of(c["recurrent_kernel"], dtype),
                     tensor_of(c["bias"], dtype)};
  for (const auto& s : c["initial_states"]) sources.push_back(tensor_of(s, dtype));
  for (auto& t : sources) t.set_requires_grad(true);
  a.x = sources[0], a.kernel = sources[1], a.recurrent_kernel = sources[2], a.bias = sources[3];
  if (sources.size() > 4) a.initial_h = sources[4];
  if (sources.size() > 5) a.initial_c = sources[5];
  a.mask = mask_of(c["mask"]);
  bool onednn_activations = a.kind == ops::RnnKind::simple_rnn
                                ? a.activation == "tanh" || a.activation == "relu" || a.activation == "sigmoid"
                                : a.activation == "tanh" && a.recurrent_activation == "sigmoid";
  bool onednn = impl == "auto" && dtype == DType::float32 && !a.mask.defined() && onednn_activations;
  EXPECT_EQ(ops::rnn_sequence_uses_onednn(a), onednn);
  onednn_cases += onednn ? 1 : 0;
  GradientTape tape;
  TensorList out = ops::rnn_sequence(a);
  expect_close(out[0], c["outputs"], tol, "outputs");
  ASSERT_EQ(out.size() - 1, c["final_states"].size());
  for (size_t i = 1; i < out.size(); ++i) expect_close(out[i], c["final_states"][i - 1], tol, "final state " + std::to_string(i - 1));

  TensorList seed_parts{tensor_of(c["P"], dtype)};
  for (const auto& q : c["Q"]) seed_parts.push_back(tensor_of(q, dtype));
  TensorList grads = compute_gradients(joined(out), sources, joined(seed_parts));
  const char* keys[] = {"grad_x", "grad_kernel", "grad_recurrent_kernel", "grad_bias"};
  for (size_t i = 0; i < 4; ++i) expect_close(grads[i], c[keys[i]], tol, keys[i]);
  for (size_t i = 4; i < sources.size(); ++i)
    expect_close(grads[i], c["grad_initial_states"][i - 4], tol, "gradient of initial state " + std::to_string(i - 4));
}

TEST(RnnKeras, Float64ReferenceMatchesKeras) {
  json ref = load_reference();
  ASSERT_GE(ref["cases"].size(), 10u);
  for (const auto& c : ref["cases"]) check_case(c, DType::float64, "reference", 2e-5);
}

TEST(RnnKeras, Float32ReferenceMatchesKeras) {
  json ref = load_reference();
  ASSERT_GE(ref["cases"].size(), 10u);
  for (const auto& c : ref["cases"]) check_case(c, DType::float32, "reference", 2e-5);
}

TEST(RnnKeras, Float32DefaultPathMatchesKeras) {
  json ref = load_reference();
  ASSERT_GE(ref["cases"].size(), 10u);
  onednn_cases = 0;
  for (const auto& c : ref["cases"]) check_case(c, DType::float32, "auto", 2e-5);
  EXPECT_GE(onednn_cases, 7);  // LSTM, both GRUs and SimpleRNN without a mask, forwards and backwards
}

}  // namespace
