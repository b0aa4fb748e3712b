// What MultiHeadAttention and GroupQueryAttention share: how a call's inputs are found
// (query, value, optional key and attention_mask, positional or by keyword), the attention mask
// Keras derives from the inputs' masks (_compute_attention_mask), the projection equations,
// attention over arbitrary attention axes on projected heads, and the weight-argument config keys.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "backend/ops_attention.h"
#include "layers/constraints.h"
#include "layers/einsum_projection.h"
#include "layers/initializers.h"
#include "layers/layer.h"
#include "layers/nested_layer.h"
#include "layers/regularizers.h"

namespace keras::layers::attention {

// Positions of the call's tensors in the input list: positional inputs are query, value, key in
// that order; keywords "query", "value", "key", "attention_mask" name the others. -1: absent.
struct InputSlots {
  int query = -1, value = -1, key = -1, attention_mask = -1;
};
// ValueError naming `where` for a missing query or value, an unknown keyword, more than three
// positional inputs, or a tensor given twice.
InputSlots input_slots(size_t n_inputs, const std::vector<std::string>& keywords, const std::string& where);

// The shapes of query, value and key (value's when absent) of a call.
struct CallShapes {
  Shape query, value, key;
  bool has_key = false;
};
CallShapes call_shapes(const std::vector<Shape>& shapes, const std::vector<std::string>& keywords,
                       const std::string& where);

// A boolean flag of the call options (use_causal_mask, return_attention_scores); false if absent.
bool call_flag(const json& options, const char* name);

// Keras's _compute_attention_mask: query_mask (B, T) -> (B, T, 1), value/key masks (B, S) ->
// (B, 1, S), the causal mask (1, T, S), the sliding-window band |i - j| < window, and the given
// attention_mask (cast to bool), all and-ed. Undefined when there is nothing to mask.
Tensor combined_mask(const Tensor& query_mask, const Tensor& value_mask, const Tensor& key_mask,
                     const Tensor& attention_mask, bool causal, std::optional<int64_t> sliding_window, int64_t tq,
                     int64_t tk);

// The tensors of one MultiHeadAttention / GroupQueryAttention call: query, value, key (value
// when not given), and the combined attention mask of combined_mask() (undefined if none).
struct CallTensors {
  Tensor query, value, key, mask;
  bool return_scores = false;
};
// Unpacks `inputs` by input_slots() and combines their masks, the given attention_mask and the
// call options (use_causal_mask, return_attention_scores) as Keras's _compute_attention_mask.
CallTensors call_tensors(const TensorList& inputs, const CallContext& ctx, std::optional<int64_t> sliding_window,
                         const std::string& where);

// Keras's _build_proj_equation: "abc,cde->abde" for (free 2, bound 1, output 2).
std::string projection_equation(int64_t free_dims, int64_t bound_dims, int64_t output_dims);

// Dot-product attention of projected heads, as Keras's einsum equations compute it:
// q (B, <seq dims>, N, D), k (B, <seq dims'>, N, D), v (B, <seq dims'>, N, Dv); `axes` (sorted,
// each in [1, rank - 3]) are the attention axes, the other sequence axes are batch-like and must
// match between q and k. The mask broadcasts to the scores after Keras's expansion (axes inserted
// before the 2 * len(axes) trailing ones). Returns the output (B, <seq dims>, N, Dv) and the
// probabilities (B, <batch-like axes>, N, <q attention axes>, <k attention axes>).
ops::DotProductAttentionOutputs attend(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const std::vector<int64_t>& axes, const Tensor& mask,
                                       const ops::DotProductAttentionOptions& options);
// The probabilities' shape for projected q and k shapes (see attend).
Shape scores_shape(const Shape& q, const Shape& k, const std::vector<int64_t>& axes);

// Repeats each head of x (B, S, H, D) `times` times along the head axis (ops.repeat, axis 2).
Tensor repeat_heads(const Tensor& x, int64_t times);

// The kernel/bias weight arguments the attention layers hand to their projections, as config
// keys in Keras's order (kernel_initializer ... bias_constraint).
template <class O>
void write_projection_args(const O& o, json& c) {
  c["kernel_initializer"] = initializers::serialize(o.kernel_initializer.ptr());
  c["bias_initializer"] = initializers::serialize(o.bias_initializer.ptr());
  c["kernel_regularizer"] = regularizers::serialize(o.kernel_regularizer.ptr());
  c["bias_regularizer"] = regularizers::serialize(o.bias_regularizer.ptr());
  c["activity_regularizer"] = regularizers::serialize(o.activity_regularizer.ptr());
  c["kernel_constraint"] = constraints::serialize(o.kernel_constraint.ptr());
  c["bias_constraint"] = constraints::serialize(o.bias_constraint.ptr());
}

template <class O>
void read_projection_args(const json& c, O& o) {
  if (c.contains("kernel_initializer")) o.kernel_initializer = initializers::from_config(c["kernel_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = initializers::from_config(c["bias_initializer"]);
  if (c.contains("kernel_regularizer")) o.kernel_regularizer = regularizers::from_config(c["kernel_regularizer"]);
  if (c.contains("bias_regularizer")) o.bias_regularizer = regularizers::from_config(c["bias_regularizer"]);
  if (c.contains("activity_regularizer")) o.activity_regularizer = regularizers::from_config(c["activity_regularizer"]);
  if (c.contains("kernel_constraint")) o.kernel_constraint = constraints::from_config(c["kernel_constraint"]);
  if (c.contains("bias_constraint")) o.bias_constraint = constraints::from_config(c["bias_constraint"]);
}

// Construction checks shared by the attention layers: initializers present, no
// activity_regularizer (not applied by this framework: NotImplementedError rather than silence),
// dropout in [0, 1), sliding_window >= 1.
template <class O>
void check_projection_args(const std::string& where, const O& o) {
  if (!o.kernel_initializer || !o.bias_initializer) fail<ValueError>(where, "kernel and bias initializers", "none");
  if (o.activity_regularizer)
    fail<NotImplementedError>(where, "activity_regularizer None", "a regularizer",
                              "Activity regularization of the projections is not supported yet.");
  if (!(o.dropout >= 0.0 && o.dropout < 1.0)) fail<ValueError>(where, "dropout in [0, 1)", std::to_string(o.dropout));
  if (o.sliding_window && *o.sliding_window < 1)
    fail<ValueError>(where, "sliding_window None or >= 1", std::to_string(*o.sliding_window));
}

}  // namespace keras::layers::attention

namespace keras::layers::attention {

// Base of the attention layers built on EinsumDense-like projections: owns them in creation
// order (so weights() lists them in Keras's order), gives each the key Keras's weights tree uses
// and keeps their weight paths under this layer's ("multi_head_attention/query/kernel").
class ProjectionOwner : public Layer, public KeyedSublayers {
 public:
  using Layer::Layer;
  std::vector<LayerPtr> sublayers() const override;
  std::vector<std::pair<std::string, LayerPtr>> keyed_sublayers() const override;
  void update_paths(const std::string& prefix) override;
  // check_input(shapes): the call's keywords and options are current_call_args() (the last call's
  // outside a call, as Keras's compute_output_spec is given the call's arguments).
  void validate_input(const std::vector<Shape>& input_shapes) const final;
  // Keras's build_config of a build(query_shape, value_shape, key_shape=None):
  // {"shapes_dict": {"query_shape": [null, T, d], "value_shape": ..., ["key_shape": ...]}}.
  json shapes_dict_build_config() const;

 protected:
  // The shape checks of the concrete layer, against current_call_args().
  virtual void check_input(const std::vector<Shape>& input_shapes) const = 0;
  // Creates the projection named options.name, keyed `key`, and builds it for `input_shape`.
  // Call from build() only; build() starts with clear_projections().
  std::shared_ptr<EinsumProjectionImpl> add_projection(const std::string& key, EinsumProjectionOptions options,
                                                       const Shape& input_shape);
  // Also remembers which call shapes the layer is built for (shapes_dict_build_config).
  void clear_projections(const CallShapes& built_for) {
    projections_.clear();
    built_for_ = built_for;
  }
  // Common projection options from an attention options struct (initializers, regularizers,
  // constraints, trainable).
  template <class O>
  EinsumProjectionOptions projection_options(const O& o) const {
    EinsumProjectionOptions p;
    p.use_bias = o.use_bias;
    p.kernel_initializer = o.kernel_initializer.ptr();
    p.bias_initializer = o.bias_initializer.ptr();
    p.kernel_regularizer = o.kernel_regularizer.ptr();
    p.bias_regularizer = o.bias_regularizer.ptr();
    p.kernel_constraint = o.kernel_constraint.ptr();
    p.bias_constraint = o.bias_constraint.ptr();
    p.trainable = trainable();
    return p;
  }

 private:
  std::vector<std::pair<std::string, std::shared_ptr<EinsumProjectionImpl>>> projections_;
  std::string prefix_;
  CallShapes built_for_;
};

// KerasSignature::build_config of the ProjectionOwner layers.
json shapes_dict_build_config(const Layer& layer);

}  // namespace keras::layers::attention
