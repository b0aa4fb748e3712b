// Layer normalization over the last axis: the fused layer_norm op (CPU kernels in
// backend/cpu/layer_norm_kernels.cpp) and ops::layer_norm, which runs it on the CPU.
//
//   layer_norm(x, gamma, beta) -> y                       attr epsilon; gamma, beta (C,)
//   layer_norm_grad(grad, x, gamma) -> (dx, dgamma, dbeta)  attr epsilon
//
// One fused op replaces the eleven elementwise and reduction ops of the composition (and the
// nineteen of their gradients), each a full pass over the activations: in a transformer's
// training step those passes took more time than the attention. The tape node saves only the
// inputs; the backward recomputes each row's statistics, which costs less than a pass over saved
// ones. On other devices ops::layer_norm keeps the composition of keras::ops, whose kernels they
// have; its gradients also go to any order, while layer_norm_grad itself is not differentiable.
#include "backend/ops_nn.h"

namespace keras {
namespace {

using Specs = std::vector<TensorSpec>;

void check_layer_norm_input(const std::string& where, const TensorSpec& x, const TensorSpec& gamma) {
  if (!is_floating(x.dtype)) fail<TypeError>(where, "a floating-point input", dtype_name(x.dtype), "Cast the tensor first.");
  if (x.shape.empty()) fail<ShapeError>(where, "an input of rank >= 1 (..., features)", "a scalar");
  if (gamma.shape != Shape{x.shape.back()} || gamma.dtype != x.dtype)
    fail<ShapeError>(where, "gamma/beta of shape (" + std::to_string(x.shape.back()) + ",) and dtype " + dtype_name(x.dtype),
                     shape_str(gamma.shape) + " " + dtype_name(gamma.dtype) + " for input " + shape_str(x.shape));
}

}  // namespace

KERAS_REGISTER_OP(layer_norm) {
  def.shape = [](const Specs& in, const Attrs& a) {
    const std::string where = "op 'layer_norm'";
    if (in.size() != 3) fail<ValueError>(where, "3 inputs (x, gamma, beta)", std::to_string(in.size()) + " inputs");
    check_layer_norm_input(where, in[0], in[1]);
    check_layer_norm_input(where, in[0], in[2]);
    if (!(a.get_float("epsilon") >= 0)) fail<ValueError>(where, "epsilon >= 0", std::to_string(a.get_float("epsilon")));
    return Specs{in[0]};
  };
  def.save = SaveInputs;
  const OpDef* grad_op = &OpRegistry::instance().define("layer_norm_grad");
  def.grad = [grad_op](const GradContext& g) {
    return run_op(*grad_op, {g.grad_outputs[0], g.input(0), g.input(1)}, g.attrs);
  };
}

KERAS_REGISTER_OP(layer_norm_grad) {
  def.shape = [](const Specs& in, const Attrs&) {
    const std::string where = "op 'layer_norm_grad'";
    if (in.size() != 3) fail<ValueError>(where, "3 inputs (grad, x, gamma)", std::to_string(in.size()) + " inputs");
    check_layer_norm_input(where, in[1], in[2]);
    if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype)
      fail<ShapeError>(where, "a gradient like x " + shape_str(in[1].shape) + " " + dtype_name(in[1].dtype),
                       shape_str(in[0].shape) + " " + dtype_name(in[0].dtype));
    return Specs{in[1], in[2], in[2]};
  };
}

namespace ops {
namespace {

// The composition the fused op replaces, for devices without its kernels.
Tensor composed_layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon) {
  Tensor mu = mean(x, {-1}, true);
  Tensor centered = subtract(x, mu);
  Tensor var = mean(square(centered), {-1}, true);
  Tensor y = multiply(centered, divide(Tensor::scalar(1.0, x.dtype(), x.device()), sqrt(add(var, epsilon))));
  if (gamma.defined()) y = multiply(y, gamma);
  if (beta.defined()) y = add(y, beta);
  return y;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon) {
  if (x.rank() < 1) fail<ShapeError>("keras::ops::layer_norm", "an input of rank >= 1", "a scalar");
  // The fused op takes (C,) gamma/beta of x's dtype; anything else (broadcast weights, mixed
  // dtypes) and other devices take the composition. A non-float x meets the op's TypeError.
  auto fits = [&](const Tensor& v) {
    return !v.defined() || (v.shape() == Shape{x.shape().back()} && v.dtype() == x.dtype() && v.device() == x.device());
  };
  if (x.device().kind != DeviceKind::cpu || !fits(gamma) || !fits(beta))
    return composed_layer_norm(x, gamma, beta, epsilon);
  static const OpDef& def = OpRegistry::instance().find("layer_norm");
  auto filled = [&](const Tensor& v, double value) {
    return v.defined() ? v : Tensor::full({x.shape().back()}, value, x.dtype(), x.device());
  };
  return run_op1(def, {x, filled(gamma, 1.0), filled(beta, 0.0)}, Attrs{{"epsilon", epsilon}});
}

}  // namespace ops
}  // namespace keras
