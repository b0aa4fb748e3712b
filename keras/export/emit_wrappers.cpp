// ONNX emitter of TimeDistributed: the wrapped layer's emitter on the steps folded into the batch,
// (N, T, ...) -> (N * T, ...), and the result unfolded back to (N, T, ...). Needs the number of
// steps and the per-step extents known (the Reshapes carry them; the batch stays dynamic).
#include "backend/errors.h"
#include "keras/export/emitter.h"

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
  // Keras hands each step's part of a mask of rank >= 3 to the wrapped layer; (batch, steps)
  // masks have no per-step part and only pass on (masks.h).
  if (!x.mask.empty() && x.rank() >= 4)
    fail<NotImplementedError>(where, "no mask on an input of rank >= 4", "a mask on " + shape_str(x.shape),
                              "Per-step masks of the wrapped layer are not exported yet.");
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
