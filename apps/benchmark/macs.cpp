// count_macs: the FLOP basis of the benchmark, read off the model rather than typed in, so a
// workload's figure follows its network (torch_models.count_macs does the same with hooks).
#include <stdexcept>

#include "bench.h"

namespace bench {
namespace {

int64_t product(const keras::Shape& s, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

// The weight of `layer` named `name` (the last path component), e.g. "kernel".
keras::Shape weight_shape(const keras::Layer& layer, const std::string& name) {
  for (const keras::Variable& v : layer.weights())
    if (v.name() == name) return v.shape();
  throw std::logic_error("count_macs: expected a weight '" + name + "' in layer '" + layer.name() + "', got none.");
}

// A recurrent layer: every step multiplies the step input by the kernel and the state by the
// recurrent kernel (all gates, both directions of a Bidirectional), as sequence_bench.py counts.
int64_t recurrent_macs(const keras::Layer& layer) {
  const int64_t steps = layer.build_input_shapes().at(0).at(1);
  int64_t per_step = 0;
  for (const keras::Variable& v : layer.weights())
    if (v.name() == "kernel" || v.name() == "recurrent_kernel") per_step += product(v.shape());
  return steps * per_step;
}

// MultiHeadAttention: the four projections at every position, then the scores (QK^T) and the
// weighted values, as sequence_bench.py counts: self-attention of n tokens.
int64_t attention_macs(const keras::Layer& layer) {
  const keras::Shape query = layer.build_input_shapes().at(0);
  const int64_t tokens = query.at(1), width = query.back();
  int64_t projections = 0;
  for (const keras::Variable& v : layer.weights())
    if (v.name() == "kernel") projections += product(v.shape());
  return tokens * projections + 2 * tokens * tokens * width;
}

int64_t layer_macs(const keras::LayerPtr& layer) {
  const std::string kind = layer->class_name();
  if (kind == "MultiHeadAttention") return attention_macs(*layer);
  if (auto* nested = dynamic_cast<const keras::Model*>(layer.get())) return count_macs(*nested);
  if (kind == "LSTM" || kind == "GRU" || kind == "SimpleRNN" || kind == "Bidirectional") return recurrent_macs(*layer);
  if (kind != "Conv1D" && kind != "Conv2D" && kind != "DepthwiseConv2D" && kind != "SeparableConv2D" && kind != "Dense")
    return 0;
  // Output extents of one sample (the batch axis dropped); channels are last in these models.
  keras::Shape out = layer->compute_output_shape(layer->build_input_shapes()).at(0);
  const int64_t out_elements = product(out, 1);
  if (out_elements <= 0)
    throw std::logic_error("count_macs: expected static output extents of '" + layer->name() + "', got " +
                           keras::shape_str(out) + ".");
  if (kind == "SeparableConv2D") {
    // A depthwise pass over every position, then a 1x1 convolution.
    const int64_t positions = out_elements / out.back();
    return positions * (product(weight_shape(*layer, "depthwise_kernel")) + product(weight_shape(*layer, "pointwise_kernel")));
  }
  // Each output element takes one multiply-add per kernel element of its output channel:
  // kh*kw*cin/groups for a convolution, kh*kw for a depthwise one, the input width for Dense.
  keras::Shape kernel = weight_shape(*layer, "kernel");
  return out_elements * (product(kernel) / out.back());
}

}  // namespace

int64_t count_macs(const keras::Model& model) {
  int64_t macs = 0;
  for (const keras::LayerPtr& layer : model.layers()) macs += layer_macs(layer);
  return macs;
}

}  // namespace bench
