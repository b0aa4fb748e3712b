// Normalization ops: batch normalization with batch statistics as registered ops (CPU kernels:
// backend/cpu/norm_kernels.cpp); batch normalization with given statistics as a composition of
// keras::ops (its gradient comes from those ops). Layer normalization: backend/ops_layer_norm.cpp.
//
//   batch_moments(x) -> (mean, var)                         per-channel, biased, no gradient
//   batch_norm_train(x, gamma, beta, mean, var) -> y         attr epsilon; mean and var must be
//       batch_moments(x): the gradient treats them as functions of x
//   batch_norm_train_grad(grad, x, gamma, mean, var) -> (dx, dgamma, dbeta)
//   batch_norm_relu_train / batch_norm_relu_train_grad      the same with a ReLU fused
//       (ops_batch_norm_relu.h)
//   batch_norm_add_relu_train(x, residual, gamma, beta, mean, var) -> relu(y + residual)
//       (ops_batch_norm_relu.h)
//   batch_norm_inference(x, mean, var, gamma, beta) -> y      attr epsilon; one pass over x,
//       gradient composed of keras::ops
// Training runs the moments first, as an op of their own, so that batch_norm_train gets them as
// inputs: its tape node then saves x, gamma and the two (C,) statistics, and the backward reuses
// the forward's moments. Saving them as outputs instead would also keep y alive until the
// backward (SaveOutputs saves every output), one activation per BatchNormalization layer.
#include "backend/autodiff.h"
#include "backend/ops_add_relu.h"
#include "backend/ops_batch_norm_relu.h"
#include "backend/ops_nn.h"

namespace keras {
namespace {

void check_channels(const std::string& where, const TensorSpec& x, const TensorSpec& v, const char* what) {
  const int64_t C = x.shape.empty() ? 1 : x.shape.back();
  if (v.shape != Shape{C})
    fail<ShapeError>(where, std::string(what) + " of shape (" + std::to_string(C) + ",) for input " + shape_str(x.shape),
                     shape_str(v.shape));
  // Two-byte inputs normalize in float32 (as Keras's layer does): their statistics and weights
  // may be float32.
  if (v.dtype != x.dtype && !(is_half(x.dtype) && v.dtype == DType::float32))
    fail<TypeError>(where, std::string(what) + " of dtype " + dtype_name(x.dtype), dtype_name(v.dtype));
}

// The statistics and weights `v` (after x) share one dtype: x's, or float32 for two-byte x.
void check_one_dtype(const std::string& where, const std::vector<TensorSpec>& in, std::initializer_list<int> v) {
  const DType first = in[static_cast<size_t>(*v.begin())].dtype;
  for (int i : v)
    if (in[static_cast<size_t>(i)].dtype != first)
      fail<TypeError>(where, "statistics and weights of one dtype (" + dtype_name(first) + ")",
                      dtype_name(in[static_cast<size_t>(i)].dtype) + " for input " + std::to_string(i));
}

void check_input(const std::string& where, const TensorSpec& x) {
  if (!is_floating(x.dtype)) fail<TypeError>(where, "a floating-point input", dtype_name(x.dtype), "Cast the tensor first.");
  if (x.shape.empty()) fail<ShapeError>(where, "an input of rank >= 1 (..., channels)", "a scalar");
}

}  // namespace

KERAS_REGISTER_OP(batch_norm_train) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    const std::string where = "op 'batch_norm_train'";
    if (in.size() != 5)
      fail<ValueError>(where, "5 inputs (x, gamma, beta, mean, var)", std::to_string(in.size()) + " inputs");
    check_input(where, in[0]);
    const char* names[] = {"", "gamma", "beta", "mean", "var"};
    for (int i = 1; i < 5; ++i) check_channels(where, in[0], in[i], names[i]);
    check_one_dtype(where, in, {1, 2, 3, 4});
    if (!(a.get_float("epsilon") > 0)) fail<ValueError>(where, "epsilon > 0", std::to_string(a.get_float("epsilon")));
    if (shape_numel(in[0].shape) / in[0].shape.back() < 1)
      fail<ShapeError>(where, "at least one element per channel", shape_str(in[0].shape));
    return std::vector<TensorSpec>{in[0]};
  };
  def.save = SaveInputs;
  def.grad = [](const GradContext& g) {
    static const OpDef& grad_op = OpRegistry::instance().find("batch_norm_train_grad");
    // mean and var get no gradient of their own: they come from batch_moments (never taped), and
    // the gradient reaching x through them is part of batch_norm_train_grad's dx.
    TensorList d = run_op(grad_op, {g.grad_outputs[0], g.input(0), g.input(1), g.input(3), g.input(4)}, g.attrs);
    return TensorList{d[0], d[1], d[2], Tensor(), Tensor()};
  };
}

KERAS_REGISTER_OP(batch_norm_train_grad) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    const std::string where = "op 'batch_norm_train_grad'";
    if (in.size() != 5)
      fail<ValueError>(where, "5 inputs (grad, x, gamma, mean, var)", std::to_string(in.size()) + " inputs");
    check_input(where, in[1]);
    if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype)
      fail<ShapeError>(where, "a gradient like x " + shape_str(in[1].shape), shape_str(in[0].shape));
    for (int i = 2; i < 5; ++i) check_channels(where, in[1], in[i], i == 2 ? "gamma" : i == 3 ? "mean" : "var");
    check_one_dtype(where, in, {2, 3, 4});
    return std::vector<TensorSpec>{in[1], in[2], in[2]};
  };
}

// The BatchNormalization -> ReLU fusion (ops_batch_norm_relu.h): batch_norm_train's checks plus
// the activation; the gradient op takes beta too (it recomputes the ReLU's mask from x).
namespace {
void check_relu(const std::string& where, const Attrs& a) {
  const std::string& act = a.get_string("activation");
  if (act != "relu" && act != "relu6") fail<ValueError>(where, "activation relu or relu6", "'" + act + "'");
}
}  // namespace

KERAS_REGISTER_OP(batch_norm_relu_train) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    check_relu("op 'batch_norm_relu_train'", a);
    static const OpDef& plain = OpRegistry::instance().find("batch_norm_train");
    return plain.shape(in, a);
  };
  def.save = SaveInputs;
  def.grad = [](const GradContext& g) {
    static const OpDef& grad_op = OpRegistry::instance().find("batch_norm_relu_train_grad");
    TensorList d = run_op(grad_op, {g.grad_outputs[0], g.input(0), g.input(1), g.input(2), g.input(3), g.input(4)}, g.attrs);
    return TensorList{d[0], d[1], d[2], Tensor(), Tensor()};
  };
}

KERAS_REGISTER_OP(batch_norm_relu_train_grad) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    const std::string where = "op 'batch_norm_relu_train_grad'";
    check_relu(where, a);
    if (in.size() != 6)
      fail<ValueError>(where, "6 inputs (grad, x, gamma, beta, mean, var)", std::to_string(in.size()) + " inputs");
    check_channels(where, in[1], in[3], "beta");
    check_one_dtype(where, in, {2, 3, 4, 5});
    static const OpDef& plain = OpRegistry::instance().find("batch_norm_train_grad");
    return plain.shape({in[0], in[1], in[2], in[4], in[5]}, a);
  };
}

// The BatchNormalization -> Add -> ReLU fusion (ops_batch_norm_relu.h): batch_norm_train's checks
// plus the residual's; the gradient is add_relu's (summing two contributions where they come)
// then batch_norm_train_grad's, the residual taking the masked gradient itself.
KERAS_REGISTER_OP(batch_norm_add_relu_train) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    const std::string where = "op 'batch_norm_add_relu_train'";
    if (in.size() != 6)
      fail<ValueError>(where, "6 inputs (x, residual, gamma, beta, mean, var)", std::to_string(in.size()) + " inputs");
    if (in[1].shape != in[0].shape || in[1].dtype != in[0].dtype)
      fail<ShapeError>(where, "a residual of x's shape and dtype " + shape_str(in[0].shape) + " " +
                                  dtype_name(in[0].dtype),
                       shape_str(in[1].shape) + " " + dtype_name(in[1].dtype));
    static const OpDef& plain = OpRegistry::instance().find("batch_norm_train");
    return plain.shape({in[0], in[2], in[3], in[4], in[5]}, a);
  };
  def.save = SaveBoth;
  def.grad_sums_two = true;
  def.grad = [](const GradContext& g) {
    static const OpDef& grad_op = OpRegistry::instance().find("batch_norm_train_grad");
    const Tensor dz = ops::add_relu_backward(g, g.output(0));
    TensorList d = run_op(grad_op, {dz, g.input(0), g.input(2), g.input(4), g.input(5)}, g.attrs);
    return TensorList{d[0], g.needs_grad[1] ? dz : Tensor(), d[1], d[2], Tensor(), Tensor()};
  };
}

// moving_average_update(moving, value), in place: moving = moving * momentum + value * (1 -
// momentum), each product rounded to the dtype and then the sum, as multiply, multiply and add
// round them (BatchNormalization's moving statistics: one op where there were five).
KERAS_REGISTER_OP(moving_average_update) {
  def.mutates_inputs = true;
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    const std::string where = "op 'moving_average_update'";
    if (in.size() != 2) fail<ValueError>(where, "2 inputs (moving, value)", std::to_string(in.size()) + " inputs");
    if (in[1].shape != in[0].shape || in[1].dtype != in[0].dtype || !is_floating(in[0].dtype))
      fail<TypeError>(where, "a floating moving value and a value of its shape and dtype " + shape_str(in[0].shape) + " " +
                                 dtype_name(in[0].dtype),
                      shape_str(in[1].shape) + " " + dtype_name(in[1].dtype));
    return std::vector<TensorSpec>{};
  };
}

KERAS_REGISTER_OP(batch_moments) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    const std::string where = "op 'batch_moments'";
    if (in.size() != 1) fail<ValueError>(where, "1 input", std::to_string(in.size()) + " inputs");
    check_input(where, in[0]);
    TensorSpec c{{in[0].shape.back()}, is_half(in[0].dtype) ? DType::float32 : in[0].dtype};
    return std::vector<TensorSpec>{c, c};
  };
}

// y = x * a + (beta - mean * a) with a = gamma / sqrt(var + eps), per channel.
KERAS_REGISTER_OP(batch_norm_inference) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    const std::string where = "op 'batch_norm_inference'";
    if (in.size() != 5) fail<ValueError>(where, "5 inputs (x, mean, var, gamma, beta)", std::to_string(in.size()) + " inputs");
    check_input(where, in[0]);
    const char* names[] = {"", "mean", "var", "gamma", "beta"};
    for (int i = 1; i < 5; ++i) check_channels(where, in[0], in[i], names[i]);
    check_one_dtype(where, in, {1, 2, 3, 4});
    return std::vector<TensorSpec>{in[0]};
  };
  def.save = SaveInputs;
  def.grad = [](const GradContext& g) {
    // Two-byte x with float32 statistics: the gradient in float32, dx rounded to x's dtype.
    const Tensor &mean = g.input(1), &var = g.input(2), &gamma = g.input(3);
    const DType x_dtype = g.input(0).dtype();
    auto in_stats_dtype = [&](const Tensor& t) { return t.dtype() == mean.dtype() ? t : ops::cast(t, mean.dtype()); };
    const Tensor gy = in_stats_dtype(g.grad_outputs[0]), x = in_stats_dtype(g.input(0));
    const double eps = g.attrs.get_float("epsilon");
    std::vector<int64_t> axes;
    for (int64_t i = 0; i + 1 < x.rank(); ++i) axes.push_back(i);
    Tensor rstd = ops::divide(Tensor::scalar(1.0, x.dtype(), x.device()), ops::sqrt(ops::add(var, eps)));
    Tensor a = ops::multiply(gamma, rstd);
    TensorList grads(5);
    if (g.needs_grad[0]) grads[0] = ops::multiply(gy, a);
    if (grads[0].defined() && grads[0].dtype() != x_dtype) grads[0] = ops::cast(grads[0], x_dtype);
    Tensor dbeta = (g.needs_grad[1] || g.needs_grad[4]) ? ops::sum(gy, axes) : Tensor();
    if (g.needs_grad[4]) grads[4] = dbeta;
    if (g.needs_grad[1]) grads[1] = ops::negative(ops::multiply(dbeta, a));
    if (g.needs_grad[2] || g.needs_grad[3]) {
      Tensor gc = ops::sum(ops::multiply(gy, ops::subtract(x, mean)), axes);  // sum g * (x - mean)
      if (g.needs_grad[3]) grads[3] = ops::multiply(gc, rstd);
      if (g.needs_grad[2]) grads[2] = ops::multiply(ops::multiply(gc, gamma), ops::multiply(ops::pow(rstd, 3.0), -0.5));
    }
    return grads;
  };
}

namespace ops {
namespace {
// v, or a (C,) tensor of `value` in `dtype`.
Tensor or_filled(const Tensor& v, const Tensor& x, double value, DType dtype) {
  if (v.defined()) return v;
  return Tensor::full({x.rank() == 0 ? 1 : x.shape().back()}, value, dtype, x.device());
}

// The dtype of the statistics and weights: the weights' where given (two-byte under a plain
// bfloat16/float16 policy), else the statistics' (float32 for two-byte x).
DType weights_dtype(const Tensor& gamma, const Tensor& beta, DType statistics) {
  return gamma.defined() ? gamma.dtype() : beta.defined() ? beta.dtype() : statistics;
}

// batch_moments(x), in the weights' dtype.
TensorList moments_like(const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  static const OpDef& moments = OpRegistry::instance().find("batch_moments");
  TensorList mv = run_op(moments, {x});
  const DType w = weights_dtype(gamma, beta, mv[0].dtype());
  if (mv[0].dtype() != w) mv = {mv[0].astype(w), mv[1].astype(w)};
  return mv;
}
}  // namespace

BatchNormOutputs batch_norm_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon) {
  static const OpDef& def = OpRegistry::instance().find("batch_norm_train");
  TensorList mv = moments_like(x, gamma, beta);
  const DType w = mv[0].dtype();
  Tensor y = run_op1(def, {x, or_filled(gamma, x, 1.0, w), or_filled(beta, x, 0.0, w), mv[0], mv[1]}, Attrs{{"epsilon", epsilon}});
  return {y, mv[0], mv[1]};
}

BatchNormOutputs batch_norm_relu_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon,
                                          const std::string& activation) {
  static const OpDef& def = OpRegistry::instance().find("batch_norm_relu_train");
  TensorList mv = moments_like(x, gamma, beta);
  const DType w = mv[0].dtype();
  Tensor y = run_op1(def, {x, or_filled(gamma, x, 1.0, w), or_filled(beta, x, 0.0, w), mv[0], mv[1]},
                     Attrs{{"epsilon", epsilon}, {"activation", activation}});
  return {y, mv[0], mv[1]};
}

BatchNormOutputs batch_norm_add_relu_training(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                                              const Tensor& beta, double epsilon) {
  static const OpDef& def = OpRegistry::instance().find("batch_norm_add_relu_train");
  TensorList mv = moments_like(x, gamma, beta);
  const DType w = mv[0].dtype();
  Tensor z = run_op1(def, {x, residual, or_filled(gamma, x, 1.0, w), or_filled(beta, x, 0.0, w), mv[0], mv[1]},
                     Attrs{{"epsilon", epsilon}});
  return {z, mv[0], mv[1]};
}

void moving_average_update(const Tensor& moving, const Tensor& value, double momentum) {
  static const OpDef& def = OpRegistry::instance().find("moving_average_update");
  run_op(def, {moving, value}, Attrs{{"momentum", momentum}});
}

Tensor batch_norm_inference(const Tensor& x, const Tensor& mean, const Tensor& variance, const Tensor& gamma,
                            const Tensor& beta, double epsilon) {
  static const OpDef& def = OpRegistry::instance().find("batch_norm_inference");
  const DType w = weights_dtype(gamma, beta, mean.dtype());
  return run_op1(def, {x, mean, variance, or_filled(gamma, x, 1.0, w), or_filled(beta, x, 0.0, w)}, Attrs{{"epsilon", epsilon}});
}

}  // namespace ops
}  // namespace keras
