#include "layers/keras_tensor_ops.h"

#include "layers/op_layer.h"

namespace keras {

namespace {
using layers::apply_op1;
KerasTensor scalar_op(const char* op, const KerasTensor& x, double value) {
  return apply_op1(op, {x}, Attrs{{"value", value}});
}
Attrs reduce_attrs(const std::vector<int64_t>& axes, bool keepdims) { return Attrs{{"axes", axes}, {"keepdims", keepdims}}; }
}  // namespace

namespace ops {
KerasTensor add(const KerasTensor& a, const KerasTensor& b) { return apply_op1("add", {a, b}); }
KerasTensor subtract(const KerasTensor& a, const KerasTensor& b) { return apply_op1("subtract", {a, b}); }
KerasTensor multiply(const KerasTensor& a, const KerasTensor& b) { return apply_op1("multiply", {a, b}); }
KerasTensor divide(const KerasTensor& a, const KerasTensor& b) { return apply_op1("divide", {a, b}); }
KerasTensor maximum(const KerasTensor& a, const KerasTensor& b) { return apply_op1("maximum", {a, b}); }
KerasTensor minimum(const KerasTensor& a, const KerasTensor& b) { return apply_op1("minimum", {a, b}); }
KerasTensor add(const KerasTensor& a, double b) { return scalar_op("add_scalar", a, b); }
KerasTensor multiply(const KerasTensor& a, double b) { return scalar_op("multiply_scalar", a, b); }
KerasTensor pow(const KerasTensor& a, double exponent) { return scalar_op("pow_scalar", a, exponent); }
KerasTensor negative(const KerasTensor& x) { return apply_op1("negative", {x}); }
KerasTensor exp(const KerasTensor& x) { return apply_op1("exp", {x}); }
KerasTensor log(const KerasTensor& x) { return apply_op1("log", {x}); }
KerasTensor sqrt(const KerasTensor& x) { return apply_op1("sqrt", {x}); }
KerasTensor square(const KerasTensor& x) { return apply_op1("square", {x}); }
KerasTensor abs(const KerasTensor& x) { return apply_op1("abs", {x}); }
KerasTensor relu(const KerasTensor& x) { return apply_op1("relu", {x}); }
KerasTensor sigmoid(const KerasTensor& x) { return apply_op1("sigmoid", {x}); }
KerasTensor tanh(const KerasTensor& x) { return apply_op1("tanh", {x}); }
KerasTensor softmax(const KerasTensor& x, int axis) { return apply_op1("softmax", {x}, Attrs{{"axis", int64_t{axis}}}); }
KerasTensor matmul(const KerasTensor& a, const KerasTensor& b, bool transpose_a, bool transpose_b) {
  return apply_op1("matmul", {a, b}, Attrs{{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}
KerasTensor sum(const KerasTensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return apply_op1("sum", {x}, reduce_attrs(axes, keepdims));
}
KerasTensor mean(const KerasTensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return apply_op1("mean", {x}, reduce_attrs(axes, keepdims));
}
}  // namespace ops

KerasTensor operator+(const KerasTensor& a, const KerasTensor& b) { return ops::add(a, b); }
KerasTensor operator-(const KerasTensor& a, const KerasTensor& b) { return ops::subtract(a, b); }
KerasTensor operator*(const KerasTensor& a, const KerasTensor& b) { return ops::multiply(a, b); }
KerasTensor operator/(const KerasTensor& a, const KerasTensor& b) { return ops::divide(a, b); }
KerasTensor operator-(const KerasTensor& x) { return ops::negative(x); }
KerasTensor operator+(const KerasTensor& a, double b) { return scalar_op("add_scalar", a, b); }
KerasTensor operator-(const KerasTensor& a, double b) { return scalar_op("add_scalar", a, -b); }
KerasTensor operator*(const KerasTensor& a, double b) { return scalar_op("multiply_scalar", a, b); }
KerasTensor operator/(const KerasTensor& a, double b) { return scalar_op("divide_scalar", a, b); }
KerasTensor operator+(double a, const KerasTensor& b) { return scalar_op("add_scalar", b, a); }
KerasTensor operator-(double a, const KerasTensor& b) { return scalar_op("rsubtract_scalar", b, a); }
KerasTensor operator*(double a, const KerasTensor& b) { return scalar_op("multiply_scalar", b, a); }
KerasTensor operator/(double a, const KerasTensor& b) { return scalar_op("rdivide_scalar", b, a); }

}  // namespace keras
