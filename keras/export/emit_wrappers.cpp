// ONNX emitter of TimeDistributed: the wrapped layer's emitter on the steps folded into the batch,
// (N, T, ...) -> (N * T, ...), and the result unfolded back to (N, T, ...). Needs the number of
// steps and the per-step extents known (the Reshapes carry them; the batch stays dynamic). A
// per-step mask is folded the same way for a wrapped layer that reads masks.
#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "layers/keras_signature.h"

namespace keras::onnx {
namespace {

std::vector<Value> emit_time_distributed(Graph& g, const EmitCall& c) {
  const std::string where = c.layer.where() + " ONNX export";
  const std::vector<LayerPtr> inner = c.layer.sublayers();
  if (inner.size() != 1 || c.inputs.size() != 1 || c.outputs.size() != 1)
    fail<NotImplementedError>(where, "one wrapped layer with one input and one output", "another call");
  const Emitter* emitter = find_emitter(emitter_key(*inner[0]));
  if (!emitter)
    fail<NotImplementedError>(where, "a wrapped layer with an ONNX mapping", inner[0]->where());
  const Value& x = c.inputs[0];
  const Shape& out = c.outputs[0].shape;
  for (size_t a = 1; a < x.shape.size(); ++a)
    if (x.shape[a] < 0) fail<NotImplementedError>(where, "known step count and extents", shape_str(x.shape));
  for (size_t a = 1; a < out.size(); ++a)
    if (out[a] < 0) fail<NotImplementedError>(where, "known output extents", shape_str(out));
  std::vector<int64_t> folded{-1};
  folded.insert(folded.end(), x.shape.begin() + 2, x.shape.end());
  Value step{g.add("Reshape", {g.as_keras(x), g.constant_ints(c.hint("fold_shape"), folded)}, {}, c.hint("fold_steps")),
             Shape{-1}, x.dtype, false};
  step.shape.insert(step.shape.end(), x.shape.begin() + 2, x.shape.end());
  // Keras hands each step's part of a mask of rank >= 3 ((batch, steps, words) of an Embedding
  // over (batch, steps, words) ids) to a wrapped layer that reads masks, folded as the input is;
  // a (batch, steps) mask has no per-step part and only passes on (masks.h).
  if (!x.mask.empty() && x.rank() >= 4 && keras_signature(inner[0]->class_name()).takes_mask) {
    std::vector<int64_t> mask_folded{-1};
    mask_folded.insert(mask_folded.end(), x.shape.begin() + 2, x.shape.end() - 1);
    step.mask = g.add("Reshape", {x.mask, g.constant_ints(c.hint("fold_mask_shape"), mask_folded)}, {}, c.hint("fold_mask"));
  }
  Shape step_out{-1};
  step_out.insert(step_out.end(), out.begin() + 2, out.end());
  const json config = inner[0]->get_config();
  EmitCall sub{*inner[0], config, {step}, {TensorSpec{step_out, c.outputs[0].dtype}}};
  const std::vector<Value> ys = (*emitter)(g, sub);
  std::vector<int64_t> unfolded{-1, x.shape[1]};
  unfolded.insert(unfolded.end(), out.begin() + 2, out.end());
  const std::string y = g.add("Reshape", {g.as_keras(ys.at(0)), g.constant_ints(c.hint("unfold_shape"), unfolded)}, {},
                              c.hint("unfold_steps"));
  return {c.output(y)};
}

KERAS_REGISTER_ONNX_EMITTER("TimeDistributed", emit_time_distributed);

}  // namespace
}  // namespace keras::onnx
