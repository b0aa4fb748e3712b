// The fused unmasked multi-head attention op (CPU kernels: backend/cpu/attention_heads_kernels.cpp)
// and ops::attention_heads, which runs it on the CPU.
//
//   attention_heads(q, k, v) -> (out, probs)        attr scale
//       q (B, Tq, H, D), k (B, Tk, H, D), v (B, Tk, H, Dv): the layout the projections produce
//       probs (B, H, Tq, Tk) = softmax(scale * q k^T) per (batch, head), Keras's scores layout
//       out (B, Tq, H, Dv) = probs v, the layout the output projection takes
//   attention_heads_grad(dout, dprobs, q, k, v, probs) -> (dq, dk, dv)   attr scale
//       dprobs of probs' shape, or of shape (0) when the probabilities got no gradient (zero)
//   attention_heads_packed(qkv) -> (out, probs)     attr scale
//       qkv (B, T, 3, H, D): self-attention's q, k and v from one projection (a row holds q's H * D
//       values, then k's, then v's); as attention_heads(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2])
//   attention_heads_packed_grad(dout, dprobs, qkv, probs) -> dqkv   attr scale
//
// The composition (backend/ops_attention.cpp with the gathering transposes of
// layers/attention_common.cpp) moves q, k, v and the output to (B, H, T, D) and back, scales q
// in a pass of its own and runs the softmax as a separate op: eight full passes per layer and
// step that this op does not make. Masks and dropout stay on the composition.
#include "backend/ops_attention_heads.h"

namespace keras {
namespace {

using Specs = std::vector<TensorSpec>;

void check_heads(const std::string& where, const TensorSpec& q, const TensorSpec& k, const TensorSpec& v) {
  const std::string got = "q " + shape_str(q.shape) + ", k " + shape_str(k.shape) + ", v " + shape_str(v.shape);
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    fail<ShapeError>(where, "q, k, v of rank 4 (batch, time, heads, features)", got);
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] || k.shape[2] != q.shape[2] || v.shape[2] != q.shape[2] ||
      k.shape[3] != q.shape[3] || v.shape[1] != k.shape[1])
    fail<ShapeError>(where, "q (B, Tq, H, D), k (B, Tk, H, D), v (B, Tk, H, Dv)", got);
  if (!is_floating(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    fail<TypeError>(where, "q, k, v of one float dtype",
                    std::string(dtype_name(q.dtype)) + ", " + dtype_name(k.dtype) + ", " + dtype_name(v.dtype));
}

Shape probs_shape(const Shape& q, const Shape& k) { return {q[0], q[2], q[1], k[1]}; }

// The gradients reaching an attention op's (out, probs): dout, zeros where none reached it, and
// dprobs, of shape (0) where none reached the probabilities (the grad ops then skip them).
std::pair<Tensor, Tensor> output_grads(const GradContext& g) {
  const Tensor& out = g.output(0);
  auto zeros = [&](const Shape& shape) { return Tensor::zeros(shape, out.dtype(), out.device()); };
  return {g.grad_outputs[0].defined() ? g.grad_outputs[0] : zeros(out.shape()),
          g.grad_outputs[1].defined() ? g.grad_outputs[1] : zeros({0})};
}

}  // namespace

KERAS_REGISTER_OP(attention_heads) {
  def.shape = [](const Specs& in, const Attrs&) {
    const std::string where = "op 'attention_heads'";
    if (in.size() != 3) fail<ValueError>(where, "3 inputs (q, k, v)", std::to_string(in.size()) + " inputs");
    check_heads(where, in[0], in[1], in[2]);
    const Shape& q = in[0].shape;
    return Specs{{{q[0], q[1], q[2], in[2].shape[3]}, in[0].dtype}, {probs_shape(q, in[1].shape), in[0].dtype}};
  };
  def.save = SaveBoth;
  def.grad_takes_missing = true;
  const OpDef* grad_op = &OpRegistry::instance().define("attention_heads_grad");
  def.grad = [grad_op](const GradContext& g) {
    const auto [dout, dprobs] = output_grads(g);
    return run_op(*grad_op, {dout, dprobs, g.input(0), g.input(1), g.input(2), g.output(1)}, g.attrs);
  };
}

KERAS_REGISTER_OP(attention_heads_grad) {
  def.shape = [](const Specs& in, const Attrs&) {
    const std::string where = "op 'attention_heads_grad'";
    if (in.size() != 6)
      fail<ValueError>(where, "6 inputs (dout, dprobs, q, k, v, probs)", std::to_string(in.size()) + " inputs");
    check_heads(where, in[2], in[3], in[4]);
    const Shape& q = in[2].shape;
    const Shape out{q[0], q[1], q[2], in[4].shape[3]}, probs = probs_shape(q, in[3].shape);
    const Shape dprobs = in[1].shape == Shape{0} ? Shape{0} : probs;  // (0): no gradient reached probs
    for (auto [i, want] : {std::pair{0, out}, std::pair{1, dprobs}, std::pair{5, probs}})
      if (in[i].shape != want || in[i].dtype != in[2].dtype)
        fail<ShapeError>(where, "input " + std::to_string(i) + " of shape " + shape_str(want) + " " + dtype_name(in[2].dtype),
                         shape_str(in[i].shape) + " " + dtype_name(in[i].dtype),
                         i == 1 ? "dprobs may also be of shape (0): no gradient reached the probabilities." : "");
    return Specs{in[2], in[3], in[4]};
  };
}

namespace {

void check_packed(const std::string& where, const TensorSpec& qkv) {
  if (qkv.shape.size() != 5 || qkv.shape[2] != 3)
    fail<ShapeError>(where, "qkv of shape (batch, time, 3, heads, features)", shape_str(qkv.shape));
  if (!is_floating(qkv.dtype)) fail<TypeError>(where, "a float qkv", dtype_name(qkv.dtype));
}

Shape packed_out_shape(const Shape& qkv) { return {qkv[0], qkv[1], qkv[3], qkv[4]}; }
Shape packed_probs_shape(const Shape& qkv) { return {qkv[0], qkv[3], qkv[1], qkv[1]}; }

}  // namespace

KERAS_REGISTER_OP(attention_heads_packed) {
  def.shape = [](const Specs& in, const Attrs&) {
    const std::string where = "op 'attention_heads_packed'";
    if (in.size() != 1) fail<ValueError>(where, "1 input (qkv)", std::to_string(in.size()) + " inputs");
    check_packed(where, in[0]);
    return Specs{{packed_out_shape(in[0].shape), in[0].dtype}, {packed_probs_shape(in[0].shape), in[0].dtype}};
  };
  def.save = SaveBoth;
  def.grad_takes_missing = true;
  const OpDef* grad_op = &OpRegistry::instance().define("attention_heads_packed_grad");
  def.grad = [grad_op](const GradContext& g) {
    const auto [dout, dprobs] = output_grads(g);
    return run_op(*grad_op, {dout, dprobs, g.input(0), g.output(1)}, g.attrs);
  };
}

KERAS_REGISTER_OP(attention_heads_packed_grad) {
  def.shape = [](const Specs& in, const Attrs&) {
    const std::string where = "op 'attention_heads_packed_grad'";
    if (in.size() != 4) fail<ValueError>(where, "4 inputs (dout, dprobs, qkv, probs)", std::to_string(in.size()) + " inputs");
    check_packed(where, in[2]);
    const Shape& qkv = in[2].shape;
    const Shape out = packed_out_shape(qkv), probs = packed_probs_shape(qkv);
    const Shape dprobs = in[1].shape == Shape{0} ? Shape{0} : probs;
    for (auto [i, want] : {std::pair{0, out}, std::pair{1, dprobs}, std::pair{3, probs}})
      if (in[i].shape != want || in[i].dtype != in[2].dtype)
        fail<ShapeError>(where, "input " + std::to_string(i) + " of shape " + shape_str(want) + " " + dtype_name(in[2].dtype),
                         shape_str(in[i].shape) + " " + dtype_name(in[i].dtype),
                         i == 1 ? "dprobs may also be of shape (0): no gradient reached the probabilities." : "");
    return Specs{in[2]};
  };
}

namespace ops {

AttentionHeadsOutputs attention_heads(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  static const OpDef& def = OpRegistry::instance().find("attention_heads");
  TensorList r = run_op(def, {q, k, v}, Attrs{{"scale", scale}});
  return {r[0], r[1]};
}

bool attention_heads_supported(const Tensor& q, const Tensor& k, const Tensor& v) {
  for (const Tensor* t : {&q, &k, &v})
    if (t->device().kind != DeviceKind::cpu || t->rank() != 4 || !is_floating(t->dtype()) || t->dtype() != q.dtype())
      return false;
  const Shape &a = q.shape(), &b = k.shape(), &c = v.shape();
  return b[0] == a[0] && c[0] == a[0] && b[2] == a[2] && c[2] == a[2] && b[3] == a[3] && c[1] == b[1];
}

AttentionHeadsOutputs attention_heads_packed(const Tensor& qkv, double scale) {
  static const OpDef& def = OpRegistry::instance().find("attention_heads_packed");
  TensorList r = run_op(def, {qkv}, Attrs{{"scale", scale}});
  return {r[0], r[1]};
}

bool attention_heads_packed_supported(const Tensor& qkv) {
  return qkv.device().kind == DeviceKind::cpu && qkv.rank() == 5 && qkv.shape()[2] == 3 &&
         (qkv.dtype() == DType::float32 || qkv.dtype() == DType::float64);
}

}  // namespace ops
}  // namespace keras
