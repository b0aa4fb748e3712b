// The add_relu op of ops_add_relu.h: its shape rule and gradient.
#include "backend/ops_add_relu.h"

#include "backend/bf16_compute.h"
#include "backend/instrumentation.h"
#include "backend/ops.h"

namespace keras {

KERAS_REGISTER_OP(add_relu) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    if (in.size() != 2) fail<ValueError>("op 'add_relu'", "2 inputs", std::to_string(in.size()) + " inputs");
    if (in[0].shape != in[1].shape)
      fail<ShapeError>("op 'add_relu'", "operands of one shape", shape_str(in[0].shape) + " and " + shape_str(in[1].shape),
                       "Broadcasting sums take ops::add and ops::relu.");
    if (in[0].dtype != in[1].dtype || !is_floating(in[0].dtype))
      fail<TypeError>("op 'add_relu'", "operands of one floating dtype",
                      dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype));
    return std::vector<TensorSpec>{in[0]};
  };
  def.save = SaveOutputs;
  def.grad_sums_two = true;
  def.grad = [](const GradContext& c) {
    const Tensor dz = ops::add_relu_backward(c, c.output(0));
    return TensorList{c.needs_grad[0] ? dz : Tensor(), c.needs_grad[1] ? dz : Tensor()};
  };
}

// relu_grad(grad + addend, y) in one pass: add_relu's gradient when two contributions reach it.
KERAS_REGISTER_OP(add_relu_grad) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    if (in.size() != 3) fail<ValueError>("op 'add_relu_grad'", "3 inputs (grad, addend, y)", std::to_string(in.size()) + " inputs");
    for (size_t i = 1; i < 3; ++i)
      if (in[i].dtype != in[0].dtype)
        fail<TypeError>("op 'add_relu_grad'", "grad, addend and y of one dtype",
                        dtype_name(in[0].dtype) + ", " + dtype_name(in[1].dtype) + " and " + dtype_name(in[2].dtype));
    if (in[1].shape != in[0].shape || in[2].shape != in[0].shape)
      fail<ShapeError>("op 'add_relu_grad'", "grad, addend and y of one shape and dtype",
                       shape_str(in[0].shape) + ", " + shape_str(in[1].shape) + " and " + shape_str(in[2].shape));
    return std::vector<TensorSpec>{in[0]};
  };
}

namespace ops {

Tensor add_relu_backward(const GradContext& c, const Tensor& y) {
  static const OpDef& relu_grad = OpRegistry::instance().find("relu_grad");
  static const OpDef& add_relu_grad = OpRegistry::instance().find("add_relu_grad");
  const Tensor& g = c.grad_outputs[0];
  if (!c.grad_output_addend) return run_op1(relu_grad, {g, y});
  if (add_relu_fuses(y)) return run_op1(add_relu_grad, {g, *c.grad_output_addend, y});
  return run_op1(relu_grad, {ops::add(g, *c.grad_output_addend), y});
}

bool add_relu_fuses(const Tensor& t) {
  const DType dt = t.dtype();
  return t.device().kind == DeviceKind::cpu &&
         (dt == DType::float32 || dt == DType::float64 || (dt == DType::bfloat16 && bf16_kernels_enabled(DeviceKind::cpu)));
}

Tensor add_then_relu(const Tensor& a, const Tensor& b) {
  if (a.device().kind == DeviceKind::cpu && b.device().kind == DeviceKind::cpu &&
      !instrumentation::split_fused_activations())
    return add_relu(a, b);
  return ops::relu(ops::add(a, b));
}

Tensor add_relu(const Tensor& a, const Tensor& b) {
  static const OpDef& def = OpRegistry::instance().find("add_relu");
  return run_op1(def, {a, b}, Attrs{});
}

}  // namespace ops
}  // namespace keras
