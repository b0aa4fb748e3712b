// Reductions: sum, mean, max, min over a list of axes (empty = all, keepdims as NumPy) and
// argmax/argmin along one axis. Kernels are in backend/cpu/reduce_kernels.cpp.
//
// Gradients go through two internal ops so that each backward is one pass on any device:
//   reduce_broadcast_grad  dx = broadcast(dy) * scale           (sum: scale 1, mean: 1/count)
//   reduce_extreme_grad    dx = (x == y) * broadcast(dy) / ties  (max, min)
// Ties: when several elements share the extreme value, the gradient is split equally among them
// (each receives dy / number_of_ties), so the gradient of max(x) sums to dy as for a unique
// maximum. A NaN extreme matches nothing and passes no gradient.
#include "backend/cpu/reference_linalg.h"
#include "backend/ops.h"

namespace keras {
namespace {

std::vector<TensorSpec> reduce_shape_impl(const std::string& op, const std::vector<TensorSpec>& in, const Attrs& a,
                                          bool needs_nonempty) {
  const TensorSpec& x = in.at(0);
  std::vector<int64_t> axes = a.has("axes") ? a.get_ints("axes") : std::vector<int64_t>{};
  auto mask = cpu::reduced_axes_mask(static_cast<int64_t>(x.shape.size()), axes, op);
  if (needs_nonempty) {
    for (size_t i = 0; i < mask.size(); ++i)
      if (mask[i] && x.shape[i] == 0)
        fail<ValueError>(op, "a non-empty reduced axis", "shape " + shape_str(x.shape) + " reducing axis " +
                         std::to_string(i) + " of extent 0", "max/min of nothing is undefined.");
  }
  if (op == "mean" && !is_floating(x.dtype))
    fail<TypeError>(op, "a float tensor", dtype_name(x.dtype), "Cast first.");
  return {{cpu::reduced_shape(x.shape, mask, a.get_bool("keepdims", false)), x.dtype}};
}

std::vector<TensorSpec> arg_shape(const std::string& op, const std::vector<TensorSpec>& in, const Attrs& a) {
  const Shape& s = in.at(0).shape;
  if (s.empty()) fail<ShapeError>(op, "a tensor of rank >= 1", "a scalar");
  int axis = normalize_axis(a.get_int("axis"), static_cast<int64_t>(s.size()), op);
  if (s[static_cast<size_t>(axis)] == 0)
    fail<ValueError>(op, "a non-empty axis", "shape " + shape_str(s) + " with axis " + std::to_string(axis) +
                     " of extent 0");
  if (in[0].dtype == DType::boolean) fail<TypeError>(op, "a numeric tensor", "bool");
  Shape out = s;
  out.erase(out.begin() + axis);
  return {{out, DType::int64}};
}

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  auto mask = cpu::reduced_axes_mask(static_cast<int64_t>(shape.size()), axes, "mean");
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (mask[i]) n *= shape[i];
  return n;
}

Tensor broadcast_grad(const GradContext& g, double scale) {
  static const OpDef& def = OpRegistry::instance().find("reduce_broadcast_grad");
  return run_op1(def, {g.grad_outputs[0]},
                 Attrs{{"shape", g.input_specs[0].shape}, {"axes", g.attrs.get_ints("axes")}, {"scale", scale}});
}

TensorList extreme_grad(const GradContext& g) {
  static const OpDef& def = OpRegistry::instance().find("reduce_extreme_grad");
  return {run_op1(def, {g.input(0), g.output(0), g.grad_outputs[0]}, Attrs{{"axes", g.attrs.get_ints("axes")}})};
}

Attrs reduce_attrs(const std::vector<int64_t>& axes, bool keepdims) {
  return Attrs{{"axes", axes}, {"keepdims", keepdims}};
}

}  // namespace

// Attrs of sum/mean/max/min: "axes" (ints, empty = all), "keepdims" (bool).
KERAS_REGISTER_OP(sum) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) { return reduce_shape_impl("sum", in, a, false); };
  def.grad = [](const GradContext& g) { return TensorList{broadcast_grad(g, 1.0)}; };
}

KERAS_REGISTER_OP(mean) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) { return reduce_shape_impl("mean", in, a, false); };
  def.grad = [](const GradContext& g) {
    int64_t n = reduced_count(g.input_specs[0].shape, g.attrs.get_ints("axes"));
    return TensorList{broadcast_grad(g, n == 0 ? 0.0 : 1.0 / static_cast<double>(n))};
  };
}

KERAS_REGISTER_OP(max) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) { return reduce_shape_impl("max", in, a, true); };
  def.grad = extreme_grad;
  def.save = SaveBoth;
}

KERAS_REGISTER_OP(min) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) { return reduce_shape_impl("min", in, a, true); };
  def.grad = extreme_grad;
  def.save = SaveBoth;
}

// Attr "axis" (int). Not differentiable.
KERAS_REGISTER_OP(argmax) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) { return arg_shape("argmax", in, a); };
}
KERAS_REGISTER_OP(argmin) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) { return arg_shape("argmin", in, a); };
}

// Internal. Input dy (the reduction's output); attrs "shape" (the reduction's input shape),
// "axes", "scale". Output: dy broadcast back over the reduced axes, times scale.
KERAS_REGISTER_OP(reduce_broadcast_grad) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    return std::vector<TensorSpec>{{a.get_ints("shape"), in.at(0).dtype}};
  };
}

// Internal. Inputs x, y = max/min(x), dy; attr "axes". Output dx of x's shape (ties split).
KERAS_REGISTER_OP(reduce_extreme_grad) { def.shape = same_as_first_input; }

namespace ops {

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  static const OpDef& def = OpRegistry::instance().find("sum");
  const Tensor& in = x.dtype() == DType::boolean ? x.astype(DType::int32) : x;
  return run_op1(def, {in}, reduce_attrs(axes, keepdims));
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  static const OpDef& def = OpRegistry::instance().find("mean");
  // Integer and bool means are float32, as in Keras.
  const Tensor& in = is_floating(x.dtype()) ? x : x.astype(DType::float32);
  return run_op1(def, {in}, reduce_attrs(axes, keepdims));
}

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  static const OpDef& def = OpRegistry::instance().find("max");
  return run_op1(def, {x}, reduce_attrs(axes, keepdims));
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  static const OpDef& def = OpRegistry::instance().find("min");
  return run_op1(def, {x}, reduce_attrs(axes, keepdims));
}

Tensor argmax(const Tensor& x, int axis) {
  static const OpDef& def = OpRegistry::instance().find("argmax");
  return run_op1(def, {x}, Attrs{{"axis", int64_t{axis}}});
}

Tensor argmin(const Tensor& x, int axis) {
  static const OpDef& def = OpRegistry::instance().find("argmin");
  return run_op1(def, {x}, Attrs{{"axis", int64_t{axis}}});
}

}  // namespace ops
}  // namespace keras
