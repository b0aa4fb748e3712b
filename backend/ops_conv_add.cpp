// conv2d_add(x, kernel[, bias], residual) -> act(conv2d + residual); attrs: conv2d's geometry and
// "activation" (see ops_conv_add.h).
#include "backend/ops_conv_add.h"

#include "backend/instrumentation.h"
#include "backend/ops.h"

namespace keras {

KERAS_REGISTER_OP(conv2d_add) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    const std::string where = "op 'conv2d_add'";
    if (in.size() != 3 && in.size() != 4)
      fail<ValueError>(where, "3 or 4 inputs (x, kernel[, bias], residual)", std::to_string(in.size()) + " inputs");
    static const OpDef& conv = OpRegistry::instance().find("conv2d");
    const std::vector<TensorSpec> y = conv.shape({in.begin(), in.end() - 1}, a);
    if (in.back().shape != y[0].shape)
      fail<ShapeError>(where, "a residual of the output's shape " + shape_str(y[0].shape), shape_str(in.back().shape));
    if (in.back().dtype != y[0].dtype)
      fail<TypeError>(where, "a residual of dtype " + std::string(dtype_name(y[0].dtype)), dtype_name(in.back().dtype));
    const std::string& act = a.get_string("activation");
    if (act != "linear" && act != "relu" && act != "relu6")
      fail<ValueError>(where, "activation linear, relu or relu6", "'" + act + "'");
    return y;
  };
}

namespace ops {

Tensor conv2d_add(const Tensor& x, const Tensor& kernel, const Tensor& bias, const Tensor& residual,
                  const Conv2DArgs& args) {
  static const OpDef& def = OpRegistry::instance().find("conv2d_add");
  if (x.rank() != 4 || kernel.rank() != 4)
    fail<ShapeError>("conv2d_add", "x (N, H, W, C) and kernel (kh, kw, C/groups, O)",
                     shape_str(x.shape()) + " and " + shape_str(kernel.shape()));
  const ConvParams p = conv2d_params(x.shape(), kernel.shape(), args);
  // check-numerics splits fused activations (oneDNN's relu post-op maps NaN to 0).
  const bool split = args.activation != "linear" && instrumentation::split_fused_activations();
  Attrs a = p.to_attrs();
  a.set("activation", split ? std::string("linear") : args.activation);
  Tensor y = bias.defined() ? run_op1(def, {x, kernel, bias, residual}, a) : run_op1(def, {x, kernel, residual}, a);
  return split ? activation(args.activation, y) : y;
}

}  // namespace ops
}  // namespace keras
