// Elementwise ops of keras::ops: arithmetic with NumPy broadcasting, unary maths, comparisons,
// where, cast, broadcast_to / sum_to_shape, and the Tensor operators. Each op's shape function
// and gradient sit here; the kernels live per device (backend/cpu/elementwise_kernels.cpp).
//
// Dtype rules: binary ops need one dtype for both operands (TypeError otherwise; cast first).
// Arithmetic refuses bool; divide, exp, log, sqrt need a floating dtype (integer division has no
// agreed meaning here, and a truncating one would be a silent surprise). Comparisons accept
// every dtype and give bool. Scalars take the tensor's dtype (added to an int tensor, 1.5 is 1).
//
// Gradients of broadcast operands are reduced with sum_to_shape. maximum/minimum send the
// gradient to the larger/smaller operand and split it half-and-half on ties (so the sum of both
// gradients is always the incoming one, and the result is symmetric in a and b). clip passes the
// gradient only strictly inside (min, max). sign and the comparisons have no gradient.
#include <cmath>

#include "backend/ops.h"

namespace keras {
namespace {

using Specs = std::vector<TensorSpec>;

enum class Kind { numeric, floating, any };

void check_dtype(const std::string& op, DType t, Kind kind) {
  if (kind == Kind::numeric && t == DType::boolean)
    fail<TypeError>(op, "a numeric dtype (float32, float64, int32, int64)", "bool", "Cast the tensor first (ops::cast).");
  if (kind == Kind::floating && !is_floating(t))
    fail<TypeError>(op, "a floating dtype (float32, float64, bfloat16, float16)", dtype_name(t), "Cast the tensor first (ops::cast).");
}

// NumPy broadcasting that also accepts unknown (-1, symbolic batch) extents, which are assumed to
// fit and checked again when real tensors run.
Shape broadcast_pair(const Shape& a, const Shape& b, const std::string& op) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else if (da == -1) out[i] = db;
    else if (db == -1) out[i] = da;
    else
      fail<ShapeError>(op, "shapes that broadcast", shape_str(a) + " and " + shape_str(b),
                       "Each pair of trailing extents must be equal or one of them 1 (NumPy broadcasting).");
  }
  return out;
}

void check_same_dtype(const std::string& op, const TensorSpec& a, const TensorSpec& b) {
  if (a.dtype != b.dtype)
    fail<TypeError>(op, "operands of one dtype", dtype_name(a.dtype) + " and " + dtype_name(b.dtype),
                    "Cast one operand first (ops::cast).");
}

ShapeFn binary_shape(const std::string& op, Kind kind, bool gives_bool = false) {
  return [op, kind, gives_bool](const Specs& in, const Attrs&) {
    check_same_dtype(op, in.at(0), in.at(1));
    check_dtype(op, in[0].dtype, kind);
    return Specs{{broadcast_pair(in[0].shape, in[1].shape, op), gives_bool ? DType::boolean : in[0].dtype}};
  };
}

ShapeFn unary_shape(const std::string& op, Kind kind) {
  return [op, kind](const Specs& in, const Attrs&) {
    check_dtype(op, in.at(0).dtype, kind);
    return Specs{in[0]};
  };
}

Tensor scalar_like(double v, const Tensor& t) { return Tensor::scalar(v, t.dtype(), t.device()); }

// Gradient of a broadcast operand: the incoming gradient summed back to the operand's shape.
Tensor reduce_to(const Tensor& g, const GradContext& ctx, size_t i) {
  return ops::sum_to_shape(g, ctx.input_specs[i].shape);
}

// The tensor-scalar forms without a public name in ops.h (used by the operators).
Tensor divide_scalar(const Tensor& x, double value) {  // x / value
  static const OpDef& def = OpRegistry::instance().find("divide_scalar");
  return run_op1(def, {x}, Attrs{{"value", value}});
}
Tensor rsubtract_scalar(const Tensor& x, double value) {  // value - x
  static const OpDef& def = OpRegistry::instance().find("rsubtract_scalar");
  return run_op1(def, {x}, Attrs{{"value", value}});
}
Tensor rdivide_scalar(const Tensor& x, double value) {  // value / x
  static const OpDef& def = OpRegistry::instance().find("rdivide_scalar");
  return run_op1(def, {x}, Attrs{{"value", value}});
}

}  // namespace

// ---- binary arithmetic ----
KERAS_REGISTER_OP(add) {
  def.shape = binary_shape("add", Kind::numeric);
  def.grad = [](const GradContext& c) {
    const Tensor& g = c.grad_outputs[0];
    return TensorList{c.needs_grad[0] ? reduce_to(g, c, 0) : Tensor(), c.needs_grad[1] ? reduce_to(g, c, 1) : Tensor()};
  };
}
KERAS_REGISTER_OP(subtract) {
  def.shape = binary_shape("subtract", Kind::numeric);
  def.grad = [](const GradContext& c) {
    const Tensor& g = c.grad_outputs[0];
    return TensorList{c.needs_grad[0] ? reduce_to(g, c, 0) : Tensor(),
                      c.needs_grad[1] ? reduce_to(ops::negative(g), c, 1) : Tensor()};
  };
}
KERAS_REGISTER_OP(multiply) {
  def.shape = binary_shape("multiply", Kind::numeric);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) {
    const Tensor& g = c.grad_outputs[0];
    return TensorList{c.needs_grad[0] ? reduce_to(ops::multiply(g, c.input(1)), c, 0) : Tensor(),
                      c.needs_grad[1] ? reduce_to(ops::multiply(g, c.input(0)), c, 1) : Tensor()};
  };
}
KERAS_REGISTER_OP(divide) {
  def.shape = binary_shape("divide", Kind::floating);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) {
    Tensor ga = ops::divide(c.grad_outputs[0], c.input(1));  // d(a/b)/da = 1/b
    Tensor gb;
    if (c.needs_grad[1]) gb = reduce_to(ops::negative(ops::divide(ops::multiply(ga, c.input(0)), c.input(1))), c, 1);
    return TensorList{c.needs_grad[0] ? reduce_to(ga, c, 0) : Tensor(), gb};
  };
}

namespace {
// maximum/minimum: `wins` says where a is selected strictly; ties split the gradient in half.
TensorList select_grad(const GradContext& c, const Tensor& wins) {
  const Tensor& g = c.grad_outputs[0];
  Tensor zero = scalar_like(0, g);
  Tensor tie = ops::equal(c.input(0), c.input(1));
  Tensor ga_full = ops::where(wins, g, ops::where(tie, ops::multiply(g, 0.5), zero));
  return TensorList{c.needs_grad[0] ? reduce_to(ga_full, c, 0) : Tensor(),
                    c.needs_grad[1] ? reduce_to(ops::subtract(g, ga_full), c, 1) : Tensor()};
}
}  // namespace

KERAS_REGISTER_OP(maximum) {
  def.shape = binary_shape("maximum", Kind::numeric);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) { return select_grad(c, ops::greater(c.input(0), c.input(1))); };
}
KERAS_REGISTER_OP(minimum) {
  def.shape = binary_shape("minimum", Kind::numeric);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) { return select_grad(c, ops::less(c.input(0), c.input(1))); };
}
KERAS_REGISTER_OP(pow) {
  def.shape = binary_shape("pow", Kind::numeric);
  def.save = SaveBoth;
  def.grad = [](const GradContext& c) {
    const Tensor& g = c.grad_outputs[0];
    const Tensor &a = c.input(0), &b = c.input(1);
    Tensor ga, gb;
    if (c.needs_grad[0])  // b * a^(b-1)
      ga = reduce_to(ops::multiply(g, ops::multiply(b, ops::pow(a, ops::add(b, -1.0)))), c, 0);
    if (c.needs_grad[1]) {  // a^b * log(a), taken as 0 where a <= 0 (no real logarithm there)
      Tensor zero = scalar_like(0, a);
      Tensor log_a = ops::where(ops::greater(a, zero), ops::log(a), zero);
      gb = reduce_to(ops::multiply(g, ops::multiply(c.output(0), log_a)), c, 1);
    }
    return TensorList{ga, gb};
  };
}

// ---- comparisons (no gradient) ----
KERAS_REGISTER_OP(equal) { def.shape = binary_shape("equal", Kind::any, true); }
KERAS_REGISTER_OP(not_equal) { def.shape = binary_shape("not_equal", Kind::any, true); }
KERAS_REGISTER_OP(less) { def.shape = binary_shape("less", Kind::any, true); }
KERAS_REGISTER_OP(less_equal) { def.shape = binary_shape("less_equal", Kind::any, true); }
KERAS_REGISTER_OP(greater) { def.shape = binary_shape("greater", Kind::any, true); }
KERAS_REGISTER_OP(greater_equal) { def.shape = binary_shape("greater_equal", Kind::any, true); }

KERAS_REGISTER_OP(where) {
  def.shape = [](const Specs& in, const Attrs&) {
    if (in.at(0).dtype != DType::boolean)
      fail<TypeError>("where", "a bool condition", dtype_name(in[0].dtype),
                      "Build it with a comparison (ops::greater, ...) or ops::cast(x, DType::boolean).");
    check_same_dtype("where", in.at(1), in.at(2));
    Shape ab;
    try {
      ab = broadcast_pair(broadcast_pair(in[0].shape, in[1].shape, "where"), in[2].shape, "where");
    } catch (const ShapeError&) {
      fail<ShapeError>("where", "condition, x and y shapes that broadcast",
                       shape_str(in[0].shape) + ", " + shape_str(in[1].shape) + " and " + shape_str(in[2].shape),
                       "Each set of trailing extents must be equal or 1 (NumPy broadcasting).");
    }
    return Specs{{ab, in[1].dtype}};
  };
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) {
    const Tensor& g = c.grad_outputs[0];
    Tensor zero = scalar_like(0, g);
    TensorList out(3);
    if (c.needs_grad[1]) out[1] = reduce_to(ops::where(c.input(0), g, zero), c, 1);
    if (c.needs_grad[2]) out[2] = reduce_to(ops::where(c.input(0), zero, g), c, 2);
    return out;
  };
}

// ---- unary ----
KERAS_REGISTER_OP(negative) {
  def.shape = unary_shape("negative", Kind::numeric);
  def.grad = [](const GradContext& c) { return TensorList{ops::negative(c.grad_outputs[0])}; };
}
KERAS_REGISTER_OP(exp) {
  def.shape = unary_shape("exp", Kind::floating);
  def.save = SaveOutputs;
  def.grad = [](const GradContext& c) { return TensorList{ops::multiply(c.grad_outputs[0], c.output(0))}; };
}
KERAS_REGISTER_OP(log) {
  def.shape = unary_shape("log", Kind::floating);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) { return TensorList{ops::divide(c.grad_outputs[0], c.input(0))}; };
}
KERAS_REGISTER_OP(sqrt) {
  def.shape = unary_shape("sqrt", Kind::floating);
  def.save = SaveOutputs;
  def.grad = [](const GradContext& c) {
    return TensorList{ops::divide(ops::multiply(c.grad_outputs[0], 0.5), c.output(0))};
  };
}
KERAS_REGISTER_OP(square) {
  def.shape = unary_shape("square", Kind::numeric);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) {
    return TensorList{ops::multiply(c.grad_outputs[0], ops::multiply(c.input(0), 2.0))};
  };
}
KERAS_REGISTER_OP(abs) {
  def.shape = unary_shape("abs", Kind::numeric);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) { return TensorList{ops::multiply(c.grad_outputs[0], ops::sign(c.input(0)))}; };
}
KERAS_REGISTER_OP(sign) { def.shape = unary_shape("sign", Kind::numeric); }
KERAS_REGISTER_OP(clip) {
  def.shape = [](const Specs& in, const Attrs& a) {
    check_dtype("clip", in.at(0).dtype, Kind::numeric);
    if (a.get_float("min") > a.get_float("max"))
      fail<ValueError>("clip", "min_value <= max_value",
                       std::to_string(a.get_float("min")) + " > " + std::to_string(a.get_float("max")));
    return Specs{in[0]};
  };
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) {
    const Tensor& g = c.grad_outputs[0];
    const Tensor& x = c.input(0);
    Tensor zero = scalar_like(0, g);
    Tensor inside = ops::where(ops::less(x, scalar_like(c.attrs.get_float("max"), x)), g, zero);
    return TensorList{ops::where(ops::greater(x, scalar_like(c.attrs.get_float("min"), x)), inside, zero)};
  };
}

// ---- tensor-scalar ("value" attribute, in the tensor's dtype) ----
KERAS_REGISTER_OP(add_scalar) {
  def.shape = unary_shape("add", Kind::numeric);
  def.grad = [](const GradContext& c) { return TensorList{c.grad_outputs[0]}; };
}
KERAS_REGISTER_OP(multiply_scalar) {
  def.shape = unary_shape("multiply", Kind::numeric);
  def.grad = [](const GradContext& c) {
    return TensorList{ops::multiply(c.grad_outputs[0], c.attrs.get_float("value"))};
  };
}
KERAS_REGISTER_OP(divide_scalar) {  // x / value
  def.shape = unary_shape("divide", Kind::floating);
  def.grad = [](const GradContext& c) {
    return TensorList{divide_scalar(c.grad_outputs[0], c.attrs.get_float("value"))};
  };
}
KERAS_REGISTER_OP(rsubtract_scalar) {  // value - x
  def.shape = unary_shape("subtract", Kind::numeric);
  def.grad = [](const GradContext& c) { return TensorList{ops::negative(c.grad_outputs[0])}; };
}
KERAS_REGISTER_OP(rdivide_scalar) {  // value / x; d/dx = -value / x^2 = -out / x
  def.shape = unary_shape("divide", Kind::floating);
  def.save = SaveBoth;
  def.grad = [](const GradContext& c) {
    return TensorList{ops::negative(ops::divide(ops::multiply(c.grad_outputs[0], c.output(0)), c.input(0)))};
  };
}
KERAS_REGISTER_OP(pow_scalar) {  // x ^ value
  def.shape = unary_shape("pow", Kind::numeric);
  def.save = SaveInputs;
  def.grad = [](const GradContext& c) {
    const double e = c.attrs.get_float("value");
    const Tensor& g = c.grad_outputs[0];
    if (e == 0) return TensorList{Tensor::zeros(g.shape(), g.dtype(), g.device())};
    return TensorList{ops::multiply(g, ops::multiply(ops::pow(c.input(0), e - 1), e))};
  };
}

// ---- broadcasting and dtype ----
KERAS_REGISTER_OP(broadcast_to) {
  def.shape = [](const Specs& in, const Attrs& a) {
    const Shape target = a.get_ints("shape");
    for (int64_t d : target)
      if (d < -1) fail<ShapeError>("broadcast_to", "extents >= 0 (or -1 for unknown)", shape_str(target));
    Shape b = broadcast_pair(in.at(0).shape, target, "broadcast_to");
    if (b != target)
      fail<ShapeError>("broadcast_to", "a shape that " + shape_str(in[0].shape) + " broadcasts to", shape_str(target),
                       "Broadcasting only adds leading axes and stretches extents of 1.");
    return Specs{{target, in[0].dtype}};
  };
  def.grad = [](const GradContext& c) { return TensorList{reduce_to(c.grad_outputs[0], c, 0)}; };
}
KERAS_REGISTER_OP(sum_to_shape) {
  def.shape = [](const Specs& in, const Attrs& a) {
    const Shape target = a.get_ints("shape");
    check_dtype("sum_to_shape", in.at(0).dtype, Kind::numeric);
    bool ok = target.size() <= in[0].shape.size();
    if (ok) ok = broadcast_pair(target, in[0].shape, "sum_to_shape") == in[0].shape;
    if (!ok)
      fail<ShapeError>("sum_to_shape", "a shape that broadcasts to the gradient's shape " + shape_str(in[0].shape),
                       shape_str(target));
    return Specs{{target, in[0].dtype}};
  };
  def.grad = [](const GradContext& c) {
    return TensorList{ops::broadcast_to(c.grad_outputs[0], c.input_specs[0].shape)};
  };
}
KERAS_REGISTER_OP(cast) {
  def.half_native = true;
  def.shape = [](const Specs& in, const Attrs& a) {
    return Specs{{in.at(0).shape, static_cast<DType>(a.get_int("dtype"))}};
  };
  def.grad = [](const GradContext& c) {
    const DType from = c.input_specs[0].dtype;
    if (!is_floating(from) || !is_floating(c.output_specs[0].dtype)) return TensorList{Tensor()};
    return TensorList{ops::cast(c.grad_outputs[0], from)};
  };
}

// ---- public functions ----
namespace ops {

#define KERAS_OP_LOOKUP(name) static const OpDef& def = OpRegistry::instance().find(name)

#define KERAS_BINARY_PUBLIC(fn)                                  \
  Tensor fn(const Tensor& a, const Tensor& b) {                  \
    KERAS_OP_LOOKUP(#fn);                                        \
    return run_op1(def, {a, b});                                 \
  }
#define KERAS_UNARY_PUBLIC(fn)                                   \
  Tensor fn(const Tensor& x) {                                   \
    KERAS_OP_LOOKUP(#fn);                                        \
    return run_op1(def, {x});                                    \
  }

KERAS_BINARY_PUBLIC(add)
KERAS_BINARY_PUBLIC(subtract)
KERAS_BINARY_PUBLIC(multiply)
KERAS_BINARY_PUBLIC(divide)
KERAS_BINARY_PUBLIC(maximum)
KERAS_BINARY_PUBLIC(minimum)
KERAS_BINARY_PUBLIC(pow)
KERAS_BINARY_PUBLIC(equal)
KERAS_BINARY_PUBLIC(not_equal)
KERAS_BINARY_PUBLIC(less)
KERAS_BINARY_PUBLIC(less_equal)
KERAS_BINARY_PUBLIC(greater)
KERAS_BINARY_PUBLIC(greater_equal)
KERAS_UNARY_PUBLIC(negative)
KERAS_UNARY_PUBLIC(exp)
KERAS_UNARY_PUBLIC(log)
KERAS_UNARY_PUBLIC(sqrt)
KERAS_UNARY_PUBLIC(square)
KERAS_UNARY_PUBLIC(abs)
KERAS_UNARY_PUBLIC(sign)

Tensor pow(const Tensor& a, double exponent) {
  KERAS_OP_LOOKUP("pow_scalar");
  return run_op1(def, {a}, Attrs{{"value", exponent}});
}

Tensor clip(const Tensor& x, double min_value, double max_value) {
  KERAS_OP_LOOKUP("clip");
  return run_op1(def, {x}, Attrs{{"min", min_value}, {"max", max_value}});
}

Tensor add(const Tensor& a, double b) {
  KERAS_OP_LOOKUP("add_scalar");
  return run_op1(def, {a}, Attrs{{"value", b}});
}

Tensor multiply(const Tensor& a, double b) {
  KERAS_OP_LOOKUP("multiply_scalar");
  return run_op1(def, {a}, Attrs{{"value", b}});
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  KERAS_OP_LOOKUP("where");
  return run_op1(def, {cond, a, b});
}

// Identity when the dtype already matches (as keras.ops.cast). Conversions to or from a
// non-floating dtype run the gradient-free "astype" op, so integer and bool results never
// join the tape.
Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  static const OpDef& astype = OpRegistry::instance().find("astype");
  KERAS_OP_LOOKUP("cast");
  const bool differentiable = is_floating(x.dtype()) && is_floating(dtype);
  return run_op1(differentiable ? def : astype, {x}, Attrs{{"dtype", static_cast<int64_t>(dtype)}});
}

// Both return their input unchanged when the shape already matches.
Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  KERAS_OP_LOOKUP("sum_to_shape");
  return run_op1(def, {grad}, Attrs{{"shape", std::vector<int64_t>(shape)}});
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  KERAS_OP_LOOKUP("broadcast_to");
  return run_op1(def, {x}, Attrs{{"shape", std::vector<int64_t>(shape)}});
}

#undef KERAS_BINARY_PUBLIC
#undef KERAS_UNARY_PUBLIC
#undef KERAS_OP_LOOKUP

}  // namespace ops

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::divide(a, b); }
Tensor operator-(const Tensor& x) { return ops::negative(x); }
Tensor operator+(const Tensor& a, double b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, double b) { return ops::add(a, -b); }
Tensor operator*(const Tensor& a, double b) { return ops::multiply(a, b); }
Tensor operator/(const Tensor& a, double b) { return divide_scalar(a, b); }
Tensor operator+(double a, const Tensor& b) { return ops::add(b, a); }
Tensor operator-(double a, const Tensor& b) { return rsubtract_scalar(b, a); }
Tensor operator*(double a, const Tensor& b) { return ops::multiply(b, a); }
Tensor operator/(double a, const Tensor& b) { return rdivide_scalar(b, a); }

}  // namespace keras
