// Activation ops: definitions, the keras::ops functions and the lookup by Keras name.
//
// Each activation `<name>` has a backward op `<name>_grad` taking (grad, s), where s is the
// forward output y for relu, sigmoid, tanh, exponential, softmax and log_softmax (so the input
// can be freed) and the input x for the rest. Device backends register kernels for both; the
// CPU ones are in backend/cpu/activation_kernels.cpp.
#include <algorithm>

#include "backend/ops.h"

namespace keras {
namespace {

void check_floating(const std::string& op, const TensorSpec& s, const char* what) {
  if (!is_floating(s.dtype))
    fail<TypeError>("op '" + op + "'", std::string("a floating-point ") + what, dtype_name(s.dtype),
                    "Cast the tensor first.");
}

ShapeFn unary_shape(const std::string& op) {
  return [op](const std::vector<TensorSpec>& in, const Attrs&) {
    if (in.size() != 1) fail<ValueError>("op '" + op + "'", "1 input", std::to_string(in.size()) + " inputs");
    check_floating(op, in[0], "input");
    return std::vector<TensorSpec>{in[0]};
  };
}

// (grad, saved) of equal shape and dtype -> one tensor like them.
ShapeFn grad_shape(const std::string& op) {
  return [op](const std::vector<TensorSpec>& in, const Attrs&) {
    if (in.size() != 2) fail<ValueError>("op '" + op + "'", "2 inputs (grad, x or y)", std::to_string(in.size()) + " inputs");
    check_floating(op, in[0], "gradient");
    if (in[0].shape != in[1].shape)
      fail<ShapeError>("op '" + op + "'", "gradient of the shape " + shape_str(in[1].shape), shape_str(in[0].shape));
    if (in[0].dtype != in[1].dtype)
      fail<TypeError>("op '" + op + "'", "gradient of dtype " + dtype_name(in[1].dtype), dtype_name(in[0].dtype));
    return std::vector<TensorSpec>{in[0]};
  };
}

// The forward op saves y or x and hands it, with the incoming gradient, to `<name>_grad`.
void define_activation(OpDef& def, bool backward_reads_output) {
  def.shape = unary_shape(def.name);
  def.save = backward_reads_output ? SaveOutputs : SaveInputs;
  // std::map keeps references stable, so the backward op can be bound before it is filled in.
  const OpDef* grad_op = &OpRegistry::instance().define(def.name + "_grad");
  def.grad = [grad_op, backward_reads_output](const GradContext& g) {
    const Tensor& saved = backward_reads_output ? g.output(0) : g.input(0);
    return TensorList{run_op1(*grad_op, {g.grad_outputs[0], saved}, g.attrs)};
  };
}

// For piecewise-linear activations the backward is linear in grad with a derivative of zero
// (almost everywhere) in s, so it is its own gradient: second derivatives come for free.
void define_activation_grad(OpDef& def, bool piecewise_linear) {
  def.shape = grad_shape(def.name);
  if (!piecewise_linear) return;
  def.save = SaveInputs;
  const OpDef* self = &def;
  def.grad = [self](const GradContext& g) {
    return TensorList{run_op1(*self, {g.grad_outputs[0], g.input(1)}, g.attrs), Tensor()};
  };
}

ShapeFn softmax_shape(const std::string& op) {
  return [op](const std::vector<TensorSpec>& in, const Attrs& a) {
    if (in.size() != 1) fail<ValueError>("op '" + op + "'", "1 input", std::to_string(in.size()) + " inputs");
    check_floating(op, in[0], "input");
    if (in[0].shape.empty())
      fail<ShapeError>("op '" + op + "'", "an input of rank >= 1", "a scalar", "Reshape it to (1,) first.");
    normalize_axis(a.get_int("axis", -1), static_cast<int64_t>(in[0].shape.size()), "op '" + op + "'");
    return std::vector<TensorSpec>{in[0]};
  };
}

}  // namespace

KERAS_REGISTER_OP(relu) { define_activation(def, true); }
KERAS_REGISTER_OP(relu_grad) { define_activation_grad(def, true); }
KERAS_REGISTER_OP(leaky_relu) { define_activation(def, false); }  // attr alpha: the negative slope
KERAS_REGISTER_OP(leaky_relu_grad) { define_activation_grad(def, true); }
KERAS_REGISTER_OP(relu6) { define_activation(def, false); }
KERAS_REGISTER_OP(relu6_grad) { define_activation_grad(def, true); }
KERAS_REGISTER_OP(elu) { define_activation(def, false); }  // attr alpha
KERAS_REGISTER_OP(elu_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(selu) { define_activation(def, false); }
KERAS_REGISTER_OP(selu_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(gelu) { define_activation(def, false); }  // attr approximate: tanh form when true
KERAS_REGISTER_OP(gelu_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(sigmoid) { define_activation(def, true); }
KERAS_REGISTER_OP(sigmoid_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(hard_sigmoid) { define_activation(def, false); }
KERAS_REGISTER_OP(hard_sigmoid_grad) { define_activation_grad(def, true); }
KERAS_REGISTER_OP(hard_silu) { define_activation(def, false); }
KERAS_REGISTER_OP(hard_silu_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(tanh) { define_activation(def, true); }
KERAS_REGISTER_OP(tanh_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(softplus) { define_activation(def, false); }
KERAS_REGISTER_OP(softplus_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(softsign) { define_activation(def, false); }
KERAS_REGISTER_OP(softsign_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(silu) { define_activation(def, false); }
KERAS_REGISTER_OP(silu_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(exponential) { define_activation(def, true); }
KERAS_REGISTER_OP(exponential_grad) { define_activation_grad(def, false); }

// attr axis (may be negative); the backward takes (grad, y).
KERAS_REGISTER_OP(softmax) {
  define_activation(def, true);
  def.shape = softmax_shape(def.name);
}
KERAS_REGISTER_OP(softmax_grad) { define_activation_grad(def, false); }
KERAS_REGISTER_OP(log_softmax) {
  define_activation(def, true);
  def.shape = softmax_shape(def.name);
}
KERAS_REGISTER_OP(log_softmax_grad) { define_activation_grad(def, false); }

namespace ops {
namespace {
const OpDef& op(const char* name) { return OpRegistry::instance().find(name); }
}  // namespace

// Each function: x float32/float64 of any shape; returns f(x) of the same shape and dtype.
// TypeError for other dtypes.
Tensor relu(const Tensor& x) {
  static const OpDef& def = op("relu");
  return run_op1(def, {x});
}
Tensor relu6(const Tensor& x) {
  static const OpDef& def = op("relu6");
  return run_op1(def, {x});
}
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  static const OpDef& def = op("leaky_relu");
  return run_op1(def, {x}, {{"alpha", negative_slope}});
}
Tensor elu(const Tensor& x, double alpha) {
  static const OpDef& def = op("elu");
  return run_op1(def, {x}, {{"alpha", alpha}});
}
Tensor selu(const Tensor& x) {
  static const OpDef& def = op("selu");
  return run_op1(def, {x});
}
Tensor gelu(const Tensor& x, bool approximate) {
  static const OpDef& def = op("gelu");
  return run_op1(def, {x}, {{"approximate", approximate}});
}
Tensor sigmoid(const Tensor& x) {
  static const OpDef& def = op("sigmoid");
  return run_op1(def, {x});
}
Tensor hard_sigmoid(const Tensor& x) {
  static const OpDef& def = op("hard_sigmoid");
  return run_op1(def, {x});
}
Tensor hard_silu(const Tensor& x) {
  static const OpDef& def = op("hard_silu");
  return run_op1(def, {x});
}
Tensor tanh(const Tensor& x) {
  static const OpDef& def = op("tanh");
  return run_op1(def, {x});
}
Tensor softplus(const Tensor& x) {
  static const OpDef& def = op("softplus");
  return run_op1(def, {x});
}
Tensor softsign(const Tensor& x) {
  static const OpDef& def = op("softsign");
  return run_op1(def, {x});
}
Tensor silu(const Tensor& x) {
  static const OpDef& def = op("silu");
  return run_op1(def, {x});
}
Tensor exponential(const Tensor& x) {
  static const OpDef& def = op("exponential");
  return run_op1(def, {x});
}
// Keras returns its argument unchanged; so does this (no op, no tape node).
Tensor linear(const Tensor& x) { return x; }

// Rank >= 1 (ShapeError otherwise); IndexError for an axis outside [-rank, rank).
Tensor softmax(const Tensor& x, int axis) {
  static const OpDef& def = op("softmax");
  return run_op1(def, {x}, {{"axis", int64_t{axis}}});
}
Tensor log_softmax(const Tensor& x, int axis) {
  static const OpDef& def = op("log_softmax");
  return run_op1(def, {x}, {{"axis", int64_t{axis}}});
}

namespace {
using ActivationFn = Tensor (*)(const Tensor&);
// Keras names with Keras defaults; "swish" and "hard_swish" are Keras's aliases of silu and
// hard_silu (Keras 3 writes the functions back as "silu" and "hard_silu").
const std::vector<std::pair<std::string, ActivationFn>>& activation_table() {
  static const std::vector<std::pair<std::string, ActivationFn>> table = {
      {"linear", [](const Tensor& x) { return linear(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"relu6", [](const Tensor& x) { return relu6(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x); }},
      {"elu", [](const Tensor& x) { return elu(x); }},
      {"selu", [](const Tensor& x) { return selu(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"swish", [](const Tensor& x) { return silu(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"hard_sigmoid", [](const Tensor& x) { return hard_sigmoid(x); }},
      {"hard_silu", [](const Tensor& x) { return hard_silu(x); }},
      {"hard_swish", [](const Tensor& x) { return hard_silu(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"softmax", [](const Tensor& x) { return softmax(x); }},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"softsign", [](const Tensor& x) { return softsign(x); }},
      {"exponential", [](const Tensor& x) { return exponential(x); }},
  };
  return table;
}
}  // namespace

Tensor activation(const std::string& name, const Tensor& x) {
  const auto& table = activation_table();
  auto it = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.first == name; });
  if (it == table.end()) {
    std::string known;
    for (const auto& e : table) known += (known.empty() ? "" : ", ") + e.first;
    fail<ValueError>("keras::ops::activation", "one of " + known, "'" + name + "'", "Unknown activation name.");
  }
  return it->second(x);
}

bool is_activation(const std::string& name) {
  const auto& table = activation_table();
  return std::any_of(table.begin(), table.end(), [&](const auto& e) { return e.first == name; });
}

std::vector<std::string> activation_names() {
  std::vector<std::string> names;
  for (const auto& e : activation_table()) names.push_back(e.first);
  return names;
}

}  // namespace ops
}  // namespace keras
