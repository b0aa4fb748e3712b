// Keras masks in the ONNX graph. An ONNX graph carries no implicit masks, so the export computes
// each Keras mask as a bool tensor of the graph (Value::mask): Embedding(mask_zero) as ids != 0,
// Masking as any(x != mask_value) over the features, then passed on or combined call by call as
// the layers' compute_mask does, and read by the emitters of the layers that use masks (the
// recurrent layers, Bidirectional, the attention layers, GlobalAveragePooling1D, the Maximum /
// Minimum / Multiply merges, Softmax, TimeDistributed's per-step masks).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "keras/export/emitter.h"

namespace keras::onnx {

// Sets the masks of a call's outputs that its emitter left without one, as Layer::operator()
// does with compute_mask: none for a layer that does not support masking (its outputs drop any
// mask, even an input returned as is), else the class's rule (recurrent: the input's with
// return_sequences; merges: the OR when every input has one; Concatenate: Keras's concatenated
// masks; global pooling: none; default: the first input's, on the first output).
void propagate_masks(Graph& g, const EmitCall& c, std::vector<Value>& outs);

// Whether any input of the call carries a mask.
bool has_masks(const EmitCall& c);

// Keras Merge's masked fold for Maximum / Minimum ("Max" / "Min": a masked entry of either
// operand takes the other's) and Multiply ("Mul": masked entries count as 1, and entries no
// input keeps are 0 when every input is masked); `inputs` are the call's in Keras layout.
std::string masked_merge(Graph& g, const EmitCall& c, const std::string& op_type);

// (1, Tq, Tk) bool from the runtime lengths of `query` and `key` (axis 1), so that no length
// needs to be known: true where the key index <= the query index (Keras's causal mask) when
// `causal`, and-ed with |i - j| < window when `window` is set (the sliding-window band).
std::string position_mask(Graph& g, const EmitCall& c, const Value& query, const Value& key, bool causal,
                          std::optional<int64_t> window);

}  // namespace keras::onnx
