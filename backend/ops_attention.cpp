// Attention ops: the masked_softmax op definition (kernels in backend/cpu/attention_kernels.cpp)
// and the compositions of backend/ops_attention.h.
//
// masked_softmax(x, mask) takes the mask already broadcast to x's shape, so a kernel walks both
// row by row. Its backward, masked_softmax_grad(grad, x, mask), recomputes the probabilities from
// x: with zero_masked the output no longer holds them at masked entries, and the subtract fill
// needs them there for a fully masked row.
#include "backend/ops_attention.h"

namespace keras {
namespace {

using Specs = std::vector<TensorSpec>;

void check_scores(const std::string& op, const TensorSpec& x, const TensorSpec& mask) {
  if (!is_floating(x.dtype))
    fail<TypeError>("op '" + op + "'", "floating-point scores", dtype_name(x.dtype), "Cast the tensor first.");
  if (x.shape.empty()) fail<ShapeError>("op '" + op + "'", "scores of rank >= 1", "a scalar");
  if (mask.dtype != DType::boolean)
    fail<TypeError>("op '" + op + "'", "a bool mask", dtype_name(mask.dtype), "Build it with a comparison or ops::cast.");
  if (mask.shape != x.shape)
    fail<ShapeError>("op '" + op + "'", "a mask of the scores' shape " + shape_str(x.shape), shape_str(mask.shape),
                     "ops::masked_softmax broadcasts the mask before calling the op.");
}

}  // namespace

// (x, mask) -> softmax over the last axis; attrs fill ("replace" | "subtract"), zero_masked.
KERAS_REGISTER_OP(masked_softmax) {
  def.shape = [](const Specs& in, const Attrs&) {
    if (in.size() != 2) fail<ValueError>("op 'masked_softmax'", "2 inputs (x, mask)", std::to_string(in.size()) + " inputs");
    check_scores("masked_softmax", in[0], in[1]);
    return Specs{in[0]};
  };
  def.save = SaveInputs;
  const OpDef* grad_op = &OpRegistry::instance().define("masked_softmax_grad");
  def.grad = [grad_op](const GradContext& g) {
    return TensorList{run_op1(*grad_op, {g.grad_outputs[0], g.input(0), g.input(1)}, g.attrs), Tensor()};
  };
}

// (grad, x, mask) -> dx, same attrs as the forward.
KERAS_REGISTER_OP(masked_softmax_grad) {
  def.shape = [](const Specs& in, const Attrs&) {
    if (in.size() != 3)
      fail<ValueError>("op 'masked_softmax_grad'", "3 inputs (grad, x, mask)", std::to_string(in.size()) + " inputs");
    check_scores("masked_softmax_grad", in[1], in[2]);
    if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype)
      fail<ShapeError>("op 'masked_softmax_grad'", "a gradient like x " + shape_str(in[1].shape),
                       shape_str(in[0].shape) + " " + dtype_name(in[0].dtype));
    return Specs{in[1]};
  };
}

namespace ops {

Tensor masked_softmax(const Tensor& x, const Tensor& mask, MaskedSoftmaxOptions options) {
  if (!mask.defined()) return softmax(x, -1);
  static const OpDef& def = OpRegistry::instance().find("masked_softmax");
  if (mask.dtype() != DType::boolean)
    fail<TypeError>("masked_softmax", "a bool mask", dtype_name(mask.dtype()), "Build it with a comparison or ops::cast.");
  if (mask.rank() > x.rank())
    fail<ShapeError>("masked_softmax", "a mask of rank <= " + std::to_string(x.rank()) + " (scores " + shape_str(x.shape()) + ")",
                     "mask " + shape_str(mask.shape()));
  Tensor full_mask;
  try {
    full_mask = broadcast_to(mask, x.shape());
  } catch (const ShapeError&) {
    fail<ShapeError>("masked_softmax", "a mask that broadcasts to the scores " + shape_str(x.shape()),
                     "mask " + shape_str(mask.shape()), "Each mask extent must be 1 or the scores' extent.");
  }
  Attrs attrs{{"fill", std::string(options.fill == MaskFill::replace ? "replace" : "subtract")},
              {"zero_masked", options.zero_masked}};
  return run_op1(def, {x, full_mask}, attrs);
}

Tensor mask_and(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return where(a, b, Tensor::zeros({}, DType::boolean, a.device()));
}

Tensor causal_mask(int64_t tq, int64_t tk) {
  Tensor rows = reshape(Tensor::arange(0, static_cast<double>(tq)), {1, tq, 1});
  Tensor cols = reshape(Tensor::arange(0, static_cast<double>(tk)), {1, 1, tk});
  return greater_equal(rows, cols);
}

DotProductAttentionOutputs dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                 const DotProductAttentionOptions& o) {
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2 || q.shape().back() != k.shape().back() ||
      k.shape()[k.rank() - 2] != v.shape()[v.rank() - 2])
    fail<ShapeError>("dot_product_attention", "q (..., Tq, D), k (..., Tk, D), v (..., Tk, Dv)",
                     "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape()));
  Tensor scaled = o.scale == 1.0 ? q : multiply(q, o.scale);
  Tensor logits = matmul(scaled, k, false, true);
  Tensor probs = masked_softmax(logits, o.mask, o.softmax);
  Tensor kept = (o.dropout > 0.0 && o.generator) ? dropout(probs, o.dropout, *o.generator) : probs;
  return {matmul(kept, v), probs};
}

}  // namespace ops
}  // namespace keras
