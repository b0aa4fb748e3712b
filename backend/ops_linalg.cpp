// Linear algebra ops: matmul and dense (the fused x @ kernel + bias [+ activation] of a Dense
// layer), their shape functions and gradients. Kernels are in backend/cpu/matmul_kernels.cpp.
//
// Gradients are matmuls with transpose flags, never materialised transposes, so the CPU backward
// of a Dense layer is two matmuls on the operands as they lie (oneDNN's with strided descriptors,
// or gemm_direct.h's for the weight gradient where the chooser picks it) and one column sum.
#include "backend/autodiff.h"
#include "backend/instrumentation.h"
#include "backend/ops.h"

namespace keras {
namespace {

std::string flags_str(bool ta, bool tb) {
  return std::string("transpose_a=") + (ta ? "true" : "false") + ", transpose_b=" + (tb ? "true" : "false");
}

void check_float_pair(const std::string& op, const TensorSpec& a, const TensorSpec& b) {
  if (a.dtype != b.dtype)
    fail<TypeError>(op, "operands of one dtype", dtype_name(a.dtype) + " and " + dtype_name(b.dtype),
                    "Cast one operand first.");
  if (!is_floating(a.dtype))
    fail<TypeError>(op, "floating-point operands", dtype_name(a.dtype), "Cast to a float type first.");
}

std::vector<TensorSpec> matmul_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  const Shape& a = in.at(0).shape;
  const Shape& b = in.at(1).shape;
  bool ta = attrs.get_bool("transpose_a", false), tb = attrs.get_bool("transpose_b", false);
  if (a.size() < 2 || b.size() < 2)
    fail<ShapeError>("matmul", "operands of rank >= 2", "shapes " + shape_str(a) + " and " + shape_str(b),
                     "Reshape a 1-D operand to (1, n) or (n, 1).");
  check_float_pair("matmul", in[0], in[1]);
  size_t ra = a.size(), rb = b.size();
  int64_t m = ta ? a[ra - 1] : a[ra - 2], ka = ta ? a[ra - 2] : a[ra - 1];
  int64_t kb = tb ? b[rb - 1] : b[rb - 2], n = tb ? b[rb - 2] : b[rb - 1];
  if (ka != kb && ka >= 0 && kb >= 0)
    fail<ShapeError>("matmul", "inner dimensions that match",
                     "shapes " + shape_str(a) + " and " + shape_str(b) + " with " + flags_str(ta, tb) + " (inner " +
                         std::to_string(ka) + " vs " + std::to_string(kb) + ")",
                     "The contracted axis of a must equal that of b.");
  Shape out = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), "matmul batch axes");
  out.push_back(m);
  out.push_back(n);
  return {{out, in[0].dtype}};
}

// Sums `g` over the axes that broadcasting added or stretched so that it has `shape`.
// Runs inside gradient functions (no recording), so a view is safe here.
Tensor reduce_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  size_t lead = g.shape().size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < g.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  Tensor s = axes.empty() ? g : ops::sum(g, axes, true);
  return s.view(shape);
}

// d(op_a(A) @ op_b(B)): each case is one matmul with flags, so no transpose is materialised.
TensorList matmul_grad(const GradContext& g) {
  bool ta = g.attrs.get_bool("transpose_a", false), tb = g.attrs.get_bool("transpose_b", false);
  const Tensor& dc = g.grad_outputs[0];
  const Tensor& a = g.input(0);
  const Tensor& b = g.input(1);
  Tensor da, db;
  if (g.needs_grad[0]) {
    if (!ta) da = ops::matmul(dc, b, false, !tb);   // dC op_b(B)^T
    else da = ops::matmul(b, dc, tb, true);          // (dC op_b(B)^T)^T = op_b(B) dC^T
    da = reduce_to(da, a.shape());
  }
  if (g.needs_grad[1]) {
    if (!tb) db = ops::matmul(a, dc, !ta, false);   // op_a(A)^T dC
    else db = ops::matmul(dc, a, true, ta);          // (op_a(A)^T dC)^T = dC^T op_a(A)
    db = reduce_to(db, b.shape());
  }
  return {da, db};
}

// Activations the dense kernel fuses as a oneDNN eltwise post-op and whose derivative follows
// from the output alone, so they are fused in training too.
bool fusable_with_grad(const std::string& act) {
  return act == "relu" || act == "sigmoid" || act == "tanh" || act == "elu";
}
// Fused only when no gradient is taken (their derivative needs the pre-activation).
bool fusable_inference_only(const std::string& act) { return act == "gelu" || act == "swish"; }

std::vector<TensorSpec> dense_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  if (in.size() != 2 && in.size() != 3)
    fail<ValueError>("dense", "2 or 3 inputs (x, kernel[, bias])", std::to_string(in.size()) + " inputs");
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  if (x.empty() || w.size() != 2 || (x.back() != w[0] && x.back() >= 0 && w[0] >= 0))
    fail<ShapeError>("dense", "x (..., in) and kernel (in, units)",
                     "x " + shape_str(x) + " and kernel " + shape_str(w), "The last axis of x must equal kernel.shape[0].");
  check_float_pair("dense", in[0], in[1]);
  if (in.size() == 3) {
    const Shape& b = in[2].shape;
    if (b.size() != 1 || b[0] != w[1])
      fail<ShapeError>("dense", "bias of shape (" + std::to_string(w[1]) + ")", "bias " + shape_str(b) +
                       " with kernel " + shape_str(w));
    check_float_pair("dense", in[0], in[2]);
  }
  Shape out(x.begin(), x.end() - 1);
  out.push_back(w[1]);
  return {{out, in[0].dtype}};
}

std::vector<TensorSpec> activation_grad_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  if (in.at(0).shape != in.at(1).shape || in[0].dtype != in[1].dtype)
    fail<ShapeError>("dense_activation_grad", "grad and output of one shape and dtype",
                     shape_str(in[0].shape) + " and " + shape_str(in[1].shape));
  return {in[0]};
}

TensorList dense_grad(const GradContext& g) {
  static const OpDef& act_grad = OpRegistry::instance().find("dense_activation_grad");
  const std::string& act = g.attrs.get_string("activation");
  if (act != "linear" && !fusable_with_grad(act))
    fail<StateError>("gradient of dense", "an activation differentiable from its output", act,
                     "This activation is only fused when no gradient is taken.");
  const Tensor& x = g.input(0);
  const Tensor& w = g.input(1);
  Tensor dz = g.grad_outputs[0];
  if (act != "linear") dz = run_op1(act_grad, {dz, g.output(0)}, Attrs{{"activation", act}});
  int64_t in = w.dim(0), units = w.dim(1);
  int64_t rows = units == 0 ? 0 : dz.numel() / units;
  Tensor dz2 = dz.view({rows, units});
  TensorList out(g.input_specs.size());
  if (g.needs_grad[0]) out[0] = ops::matmul(dz2, w, false, true).view(x.shape());
  if (g.needs_grad[1]) out[1] = ops::matmul(x.view({rows, in}), dz2, true, false);
  if (out.size() > 2 && g.needs_grad[2]) out[2] = ops::sum(dz2, {0}, false);
  return out;
}

std::string canonical_activation(const std::string& name) {
  if (name.empty() || name == "linear" || name == "None" || name == "none") return "linear";
  if (name == "silu") return "swish";
  return name;
}

}  // namespace

KERAS_REGISTER_OP(matmul) {
  def.shape = matmul_shape;
  def.grad = matmul_grad;
  def.save = SaveInputs;
}

// Inputs x, kernel[, bias]; attr "activation" is "linear" or a fused activation name.
// The output is saved because the fused activations differentiate from it.
KERAS_REGISTER_OP(dense) {
  def.shape = dense_shape;
  def.grad = dense_grad;
  def.save = SaveBoth;
}

// Internal: dz = dy * act'(z) expressed through y = act(z), for the fused dense activations.
KERAS_REGISTER_OP(dense_activation_grad) { def.shape = activation_grad_shape; }

namespace ops {

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  static const OpDef& def = OpRegistry::instance().find("matmul");
  return run_op1(def, {a, b}, Attrs{{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}

Tensor dense(const Tensor& x, const Tensor& kernel, const Tensor& bias, const std::string& activation) {
  static const OpDef& def = OpRegistry::instance().find("dense");
  std::string act = canonical_activation(activation);
  bool fuse = act == "linear" || fusable_with_grad(act);
  if (!fuse && fusable_inference_only(act)) {
    bool taping = grad_recording() &&
                  (x.requires_grad() || kernel.requires_grad() || (bias.defined() && bias.requires_grad()));
    fuse = !taping;
  }
  if (act != "linear" && instrumentation::split_fused_activations()) fuse = false;  // check-numerics
  Attrs attrs{{"activation", fuse ? act : std::string("linear")}};
  Tensor y = bias.defined() ? run_op1(def, {x, kernel, bias}, attrs) : run_op1(def, {x, kernel}, attrs);
  return fuse ? y : ops::activation(activation, y);
}

}  // namespace ops
}  // namespace keras
