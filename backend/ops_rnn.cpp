// The fused recurrent ops: argument checks, shape functions, the gradient (one backward op that
// runs backpropagation through time) and ops::rnn_sequence. Kernels: backend/cpu/rnn_*.cpp.
#include "backend/ops_rnn.h"

#include <algorithm>

#include "backend/autodiff.h"
#include "backend/ops.h"

namespace keras {
namespace ops {

int64_t rnn_gate_count(RnnKind kind) {
  switch (kind) {
    case RnnKind::lstm: return 4;
    case RnnKind::gru: return 3;
    case RnnKind::simple_rnn: return 1;
  }
  return 1;
}

std::string rnn_kind_name(RnnKind kind) {
  switch (kind) {
    case RnnKind::lstm: return "lstm";
    case RnnKind::gru: return "gru";
    case RnnKind::simple_rnn: return "simple_rnn";
  }
  return "?";
}

}  // namespace ops

namespace {

const char* const kOp = "rnn_sequence";

int64_t gates_of(const std::string& kind) {
  if (kind == "lstm") return 4;
  if (kind == "gru") return 3;
  if (kind == "simple_rnn") return 1;
  fail<ValueError>(kOp, "kind 'lstm', 'gru' or 'simple_rnn'", "'" + kind + "'");
}

void expect_shape(const std::string& what, const Shape& got, const Shape& want, const std::string& hint = "") {
  bool ok = got.size() == want.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = want[i] < 0 || got[i] < 0 || got[i] == want[i];
  if (!ok) fail<ShapeError>(kOp, what + " of shape " + shape_str(want), shape_str(got), hint);
}

// Validates the forward op's inputs (see backend/cpu/rnn_kernels.h for their order) and returns
// the output specs {y, h_T [, c_T], workspace handle} (the handle: backend/cpu/rnn_kernels.h).
std::vector<TensorSpec> forward_shape(const std::vector<TensorSpec>& in, const Attrs& a) {
  const std::string& kind = a.get_string("kind");
  int64_t g = gates_of(kind);
  bool lstm = kind == "lstm", masked = a.get_bool("masked");
  size_t want = 5 + (lstm ? 1 : 0) + (masked ? 1 : 0);
  if (in.size() != want)
    fail<ValueError>(kOp, std::to_string(want) + " inputs", std::to_string(in.size()) + " inputs");
  const Shape& xs = in[0].shape;
  if (xs.size() != 3) fail<ShapeError>(kOp, "x of rank 3 (batch, time, input)", shape_str(xs));
  for (size_t i = 0; i < 5 + (lstm ? 1u : 0u); ++i) {
    if (!is_floating(in[i].dtype))
      fail<TypeError>(kOp, "floating-point operands", dtype_name(in[i].dtype), "Cast to a float type first.");
    if (in[i].dtype != in[0].dtype)
      fail<TypeError>(kOp, "operands of one dtype", dtype_name(in[0].dtype) + " and " + dtype_name(in[i].dtype));
  }
  const Shape& rs = in[2].shape;
  if (rs.size() != 2 || rs[1] != g * rs[0])
    fail<ShapeError>(kOp, "recurrent_kernel of shape (units, " + std::to_string(g) + " * units) for " + kind,
                     shape_str(rs));
  int64_t units = rs[0], batch = xs[0];
  expect_shape("kernel", in[1].shape, {xs[2], g * units}, "kernel is (input, gates * units).");
  bool two_rows = kind == "gru" && a.get_bool("reset_after");
  expect_shape("bias", in[3].shape, two_rows ? Shape{2, g * units} : Shape{g * units},
               two_rows ? "GRU with reset_after=True has Keras's (2, 3 * units) bias." : "");
  expect_shape("initial_h", in[4].shape, {batch, units});
  if (lstm) expect_shape("initial_c", in[5].shape, {batch, units});
  if (masked) {
    const TensorSpec& m = in.back();
    if (m.dtype != DType::boolean) fail<TypeError>(kOp, "a boolean mask", dtype_name(m.dtype));
    expect_shape("mask", m.shape, {batch, xs[1]});
  }
  std::vector<TensorSpec> out{{{batch, xs[1], units}, in[0].dtype}, {{batch, units}, in[0].dtype}};
  if (lstm) out.push_back({{batch, units}, in[0].dtype});
  // Two-byte operands run in float32 (run_op): the workspace is the float32 run's, kept as it is.
  out.push_back({{1}, is_half(in[0].dtype) ? DType::float32 : in[0].dtype});
  return out;
}

// Inputs: the forward's inputs, its outputs, then the gradients of y, h_T [, c_T].
std::vector<TensorSpec> backward_shape(const std::vector<TensorSpec>& in, const Attrs& a) {
  bool lstm = a.get_string("kind") == "lstm";
  size_t n_in = 5 + (lstm ? 1 : 0) + (a.get_bool("masked") ? 1 : 0);
  size_t n_out = lstm ? 4 : 3;
  if (in.size() != n_in + n_out + (n_out - 1))
    fail<ValueError>("rnn_sequence_backward", std::to_string(n_in + 2 * n_out - 1) + " inputs",
                     std::to_string(in.size()) + " inputs");
  std::vector<TensorSpec> out(in.begin(), in.begin() + 5 + (lstm ? 1 : 0));
  return out;
}

TensorList forward_grad(const GradContext& g) {
  static const OpDef& bwd = OpRegistry::instance().find("rnn_sequence_backward");
  TensorList ins;
  for (size_t i = 0; i < g.input_specs.size(); ++i) ins.push_back(g.input(i));
  for (size_t i = 0; i < g.output_specs.size(); ++i) ins.push_back(g.output(i));
  for (size_t i = 0; i + 1 < g.output_specs.size(); ++i) ins.push_back(g.grad_outputs[i]);
  TensorList grads = run_op(bwd, ins, g.attrs);
  grads.resize(g.input_specs.size());  // no gradient for the mask
  for (size_t i = 0; i < grads.size(); ++i)
    if (!g.needs_grad[i]) grads[i] = Tensor();
  return grads;
}

}  // namespace

// Attrs: kind, activation, recurrent_activation, reset_after, go_backwards, zero_output_for_mask,
// masked, implementation ("onednn" or "reference", resolved by ops::rnn_sequence), training.
KERAS_REGISTER_OP(rnn_sequence) {
  def.shape = forward_shape;
  def.grad = forward_grad;
  def.save = SaveBoth;
  def.kernel_allocates = true;  // the workspace behind the handle is sized by the implementation
}
KERAS_REGISTER_OP(rnn_sequence_backward) { def.shape = backward_shape; }

namespace ops {
namespace {

bool onednn_activations(const RnnSequenceArgs& a) {
  if (a.kind == RnnKind::simple_rnn)
    return a.activation == "tanh" || a.activation == "relu" || a.activation == "sigmoid";
  return a.activation == "tanh" && a.recurrent_activation == "sigmoid";
}

bool is_elementwise_activation(const std::string& name) {
  return name != "softmax" && name != "log_softmax" && is_activation(name);
}

}  // namespace

bool rnn_sequence_uses_onednn(const RnnSequenceArgs& a) {
  if (a.implementation == "reference") return false;
  return a.x.defined() && a.x.rank() == 3 && a.x.dim(0) > 0 && a.x.dim(1) > 0 &&
         a.x.device().kind == DeviceKind::cpu && a.x.dtype() == DType::float32 && !a.mask.defined() &&
         onednn_activations(a);
}

TensorList rnn_sequence(const RnnSequenceArgs& a) {
  static const OpDef& def = OpRegistry::instance().find("rnn_sequence");
  const std::string kind = rnn_kind_name(a.kind);
  if (!a.x.defined() || !a.kernel.defined() || !a.recurrent_kernel.defined())
    fail<ValueError>(kOp, "x, kernel and recurrent_kernel", "an undefined tensor among them");
  if (a.implementation != "auto" && a.implementation != "reference" && a.implementation != "onednn")
    fail<ValueError>(kOp, "implementation 'auto', 'reference' or 'onednn'", "'" + a.implementation + "'");
  for (const std::string* act : {&a.activation, &a.recurrent_activation})
    if (!is_elementwise_activation(*act) && (act == &a.activation || a.kind != RnnKind::simple_rnn))
      fail<ValueError>(kOp, "an elementwise Keras activation (tanh, sigmoid, relu, ...)", "'" + *act + "'");
  if (a.x.rank() != 3) fail<ShapeError>(kOp, "x of rank 3 (batch, time, input)", shape_str(a.x.shape()));
  if (a.recurrent_kernel.rank() != 2)
    fail<ShapeError>(kOp, "recurrent_kernel of rank 2 (units, gates * units)", shape_str(a.recurrent_kernel.shape()));
  bool onednn = rnn_sequence_uses_onednn(a);
  if (a.implementation == "onednn" && !onednn)
    fail<NotImplementedError>(kOp + std::string(" (oneDNN)"),
                              "float32 on the CPU, no mask and oneDNN's activations (LSTM/GRU: tanh and "
                              "sigmoid; SimpleRNN: tanh, relu or sigmoid)",
                              dtype_name(a.x.dtype()) + (a.mask.defined() ? " with a mask" : "") + ", activation '" +
                                  a.activation + "', recurrent_activation '" + a.recurrent_activation + "'",
                              "Use implementation 'auto' or 'reference'.");
  int64_t batch = a.x.dim(0), units = a.recurrent_kernel.dim(0), gates = rnn_gate_count(a.kind);
  bool two_rows = a.kind == RnnKind::gru && a.reset_after;
  auto zeros = [&](const Shape& s) { return Tensor::zeros(s, a.x.dtype(), a.x.device()); };
  TensorList in{a.x, a.kernel, a.recurrent_kernel,
                a.bias.defined() ? a.bias : zeros(two_rows ? Shape{2, gates * units} : Shape{gates * units}),
                a.initial_h.defined() ? a.initial_h : zeros({batch, units})};
  if (a.kind == RnnKind::lstm) in.push_back(a.initial_c.defined() ? a.initial_c : zeros({batch, units}));
  else if (a.initial_c.defined())
    fail<ValueError>(kOp, "no initial_c for " + kind, "an initial_c of shape " + shape_str(a.initial_c.shape()),
                     "Only LSTM has a carry state.");
  if (a.mask.defined()) in.push_back(a.mask);
  bool training = grad_recording() && std::any_of(in.begin(), in.end(), [](const Tensor& t) { return t.requires_grad(); });
  Attrs attrs{{"kind", kind},
              {"activation", a.activation},
              {"recurrent_activation", a.kind == RnnKind::simple_rnn ? std::string("linear") : a.recurrent_activation},
              {"reset_after", a.kind == RnnKind::gru && a.reset_after},
              {"go_backwards", a.go_backwards},
              {"zero_output_for_mask", a.zero_output_for_mask},
              {"masked", a.mask.defined()},
              {"implementation", std::string(onednn ? "onednn" : "reference")},
              {"training", training}};
  TensorList out = run_op(def, in, attrs);
  out.pop_back();  // the workspace
  return out;
}

}  // namespace ops
}  // namespace keras
