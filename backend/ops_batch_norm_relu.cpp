// The fused BatchNormalization -> ReLU ops (see ops_batch_norm_relu.h); their checks are
// batch_norm_train's (backend/ops_norm.cpp) plus the activation and beta.
#include "backend/ops_batch_norm_relu.h"

#include "backend/autodiff.h"

namespace keras {
namespace {

void check_activation(const std::string& where, const Attrs& a) {
  const std::string& act = a.get_string("activation");
  if (act != "relu" && act != "relu6") fail<ValueError>(where, "activation relu or relu6", "'" + act + "'");
}

}  // namespace

KERAS_REGISTER_OP(batch_norm_relu_train) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    check_activation("op 'batch_norm_relu_train'", a);
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
    check_activation(where, a);
    if (in.size() != 6)
      fail<ValueError>(where, "6 inputs (grad, x, gamma, beta, mean, var)", std::to_string(in.size()) + " inputs");
    if (in[3].shape != in[2].shape || in[3].dtype != in[2].dtype)
      fail<ShapeError>(where, "beta like gamma " + shape_str(in[2].shape), shape_str(in[3].shape));
    static const OpDef& plain = OpRegistry::instance().find("batch_norm_train_grad");
    return plain.shape({in[0], in[1], in[2], in[4], in[5]}, a);
  };
}

namespace ops {

BatchNormOutputs batch_norm_relu_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon,
                                          const std::string& activation) {
  static const OpDef& moments = OpRegistry::instance().find("batch_moments");
  static const OpDef& def = OpRegistry::instance().find("batch_norm_relu_train");
  const int64_t C = x.rank() == 0 ? 1 : x.shape().back();
  auto filled = [&](const Tensor& v, double value) { return v.defined() ? v : Tensor::full({C}, value, x.dtype(), x.device()); };
  TensorList mv = run_op(moments, {x});
  Tensor y = run_op1(def, {x, filled(gamma, 1.0), filled(beta, 0.0), mv[0], mv[1]},
                     Attrs{{"epsilon", epsilon}, {"activation", activation}});
  return {y, mv[0], mv[1]};
}

}  // namespace ops
}  // namespace keras
