// Pooling ops: geometry, definitions and the keras::ops functions (CPU kernels:
// backend/cpu/pool_kernels.cpp).
//
//   max_pool2d(x) -> (y, indices)   attrs pool_size, strides (2 ints each), padding
//   max_pool2d_grad(grad, indices)  attrs as above plus input_shape
//   max_pool2d_inference(x) -> y   no workspace, no gradient: used when nothing is taped
//   avg_pool2d(x) -> y
//   avg_pool2d_grad(grad)           attrs plus input_shape
// The forward ops save nothing but what their backward reads: max pooling its indices output
// (the winning position in each window, pool_reference.h), average pooling nothing at all.
#include "backend/autodiff.h"
#include "backend/ops_nn.h"

namespace keras {
namespace ops {

Pool2DGeometry pool2d_geometry(int64_t in_h, int64_t in_w, Size2 pool_size, Size2 strides, const std::string& padding,
                               const std::string& where) {
  for (int i = 0; i < 2; ++i) {
    if (pool_size[i] < 1)
      fail<ValueError>(where, "pool_size entries >= 1", "(" + std::to_string(pool_size[0]) + ", " + std::to_string(pool_size[1]) + ")");
    if (strides[i] < 1)
      fail<ValueError>(where, "strides entries >= 1", "(" + std::to_string(strides[0]) + ", " + std::to_string(strides[1]) + ")");
  }
  if (padding != "valid" && padding != "same")
    fail<ValueError>(where, "padding 'valid' or 'same'", "'" + padding + "'");
  Pool2DGeometry g;
  const int64_t in[2] = {in_h, in_w};
  int64_t out[2], before[2], after[2];
  for (int i = 0; i < 2; ++i) {
    before[i] = after[i] = 0;
    if (in[i] < 0) {
      out[i] = -1;
    } else if (padding == "valid") {
      if (in[i] < pool_size[i])
        fail<ShapeError>(where, "a pool window that fits the input with padding 'valid'",
                         "pool_size (" + std::to_string(pool_size[0]) + ", " + std::to_string(pool_size[1]) +
                             ") over spatial extents (" + std::to_string(in_h) + ", " + std::to_string(in_w) + ")",
                         "Use padding='same' or a smaller pool_size.");
      out[i] = (in[i] - pool_size[i]) / strides[i] + 1;
    } else {
      out[i] = (in[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>((out[i] - 1) * strides[i] + pool_size[i] - in[i], 0);
      before[i] = total / 2;
      after[i] = total - before[i];
    }
  }
  g.out_h = out[0], g.out_w = out[1];
  g.pad_top = before[0], g.pad_bottom = after[0], g.pad_left = before[1], g.pad_right = after[1];
  return g;
}

Shape pool2d_output_shape(const Shape& x, Size2 pool_size, Size2 strides, const std::string& padding,
                          const std::string& where) {
  if (x.size() != 4)
    fail<ShapeError>(where, "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(x));
  auto g = pool2d_geometry(x[1], x[2], pool_size, strides, padding, where);
  return {x[0], g.out_h, g.out_w, x[3]};
}

}  // namespace ops

namespace {

ops::Size2 size2_attr(const Attrs& a, const char* key, const std::string& where) {
  const auto& v = a.get_ints(key);
  if (v.size() != 2) fail<ValueError>(where, std::string("2 entries in attr '") + key + "'", std::to_string(v.size()));
  return {v[0], v[1]};
}

Shape pooled_shape(const std::string& op, const TensorSpec& x, const Attrs& a) {
  const std::string where = "op '" + op + "'";
  if (!is_floating(x.dtype))
    fail<TypeError>(where, "a floating-point input", dtype_name(x.dtype), "Cast the tensor first.");
  return ops::pool2d_output_shape(x.shape, size2_attr(a, "pool_size", where), size2_attr(a, "strides", where),
                                  a.get_string("padding"), where);
}

void check_arity(const std::string& op, const std::vector<TensorSpec>& in, size_t n) {
  if (in.size() != n)
    fail<ValueError>("op '" + op + "'", std::to_string(n) + " input(s)", std::to_string(in.size()) + " inputs");
}

// The grad ops check that the incoming gradient has the pooled shape of input_shape.
Shape grad_input_shape(const std::string& op, const TensorSpec& grad, const Attrs& a) {
  const auto& s = a.get_ints("input_shape");
  Shape input(s.begin(), s.end());
  Shape pooled = pooled_shape(op, {input, grad.dtype}, a);
  if (pooled != grad.shape)
    fail<ShapeError>("op '" + op + "'", "a gradient of shape " + shape_str(pooled), shape_str(grad.shape));
  return input;
}

Attrs grad_attrs(const GradContext& g) {
  Attrs a = g.attrs;
  a.set("input_shape", std::vector<int64_t>(g.input_specs[0].shape.begin(), g.input_specs[0].shape.end()));
  return a;
}

}  // namespace

KERAS_REGISTER_OP(max_pool2d) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    check_arity("max_pool2d", in, 1);
    Shape out = pooled_shape("max_pool2d", in[0], a);
    return std::vector<TensorSpec>{{out, in[0].dtype}, {out, DType::int32}};
  };
  def.save = SaveOutputs;
  def.grad = [](const GradContext& g) {
    static const OpDef& grad_op = OpRegistry::instance().find("max_pool2d_grad");
    return TensorList{run_op1(grad_op, {g.grad_outputs[0], g.output(1)}, grad_attrs(g))};
  };
}

KERAS_REGISTER_OP(max_pool2d_inference) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    check_arity("max_pool2d_inference", in, 1);
    return std::vector<TensorSpec>{{pooled_shape("max_pool2d_inference", in[0], a), in[0].dtype}};
  };
}

KERAS_REGISTER_OP(max_pool2d_grad) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    check_arity("max_pool2d_grad", in, 2);
    if (in[1].dtype != DType::int32 || in[1].shape != in[0].shape)
      fail<ShapeError>("op 'max_pool2d_grad'", "int32 indices of the gradient's shape " + shape_str(in[0].shape),
                       dtype_name(in[1].dtype) + " " + shape_str(in[1].shape));
    return std::vector<TensorSpec>{{grad_input_shape("max_pool2d_grad", in[0], a), in[0].dtype}};
  };
}

KERAS_REGISTER_OP(avg_pool2d) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    check_arity("avg_pool2d", in, 1);
    return std::vector<TensorSpec>{{pooled_shape("avg_pool2d", in[0], a), in[0].dtype}};
  };
  def.grad = [](const GradContext& g) {
    static const OpDef& grad_op = OpRegistry::instance().find("avg_pool2d_grad");
    return TensorList{run_op1(grad_op, {g.grad_outputs[0]}, grad_attrs(g))};
  };
}

// Linear in grad: its own gradient is average pooling again.
KERAS_REGISTER_OP(avg_pool2d_grad) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    check_arity("avg_pool2d_grad", in, 1);
    return std::vector<TensorSpec>{{grad_input_shape("avg_pool2d_grad", in[0], a), in[0].dtype}};
  };
  def.grad = [](const GradContext& g) {
    static const OpDef& fwd = OpRegistry::instance().find("avg_pool2d");
    return TensorList{run_op1(fwd, {g.grad_outputs[0]}, g.attrs)};
  };
}

namespace ops {
namespace {
Attrs pool_attrs(Size2 pool_size, Size2 strides, const std::string& padding) {
  return Attrs{{"pool_size", std::vector<int64_t>{pool_size[0], pool_size[1]}},
               {"strides", std::vector<int64_t>{strides[0], strides[1]}},
               {"padding", padding}};
}
}  // namespace

// Without a tape to record on, the workspace would be computed only to be dropped.
Tensor max_pool2d(const Tensor& x, Size2 pool_size, Size2 strides, const std::string& padding) {
  static const OpDef& def = OpRegistry::instance().find("max_pool2d");
  static const OpDef& inference = OpRegistry::instance().find("max_pool2d_inference");
  if (!(grad_recording() && x.requires_grad())) return run_op1(inference, {x}, pool_attrs(pool_size, strides, padding));
  return run_op(def, {x}, pool_attrs(pool_size, strides, padding))[0];
}

Tensor avg_pool2d(const Tensor& x, Size2 pool_size, Size2 strides, const std::string& padding) {
  static const OpDef& def = OpRegistry::instance().find("avg_pool2d");
  return run_op1(def, {x}, pool_attrs(pool_size, strides, padding));
}

}  // namespace ops
}  // namespace keras
