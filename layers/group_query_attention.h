// GroupQueryAttention (keras.layers.GroupQueryAttention, Keras class GroupedQueryAttention):
// attention with num_query_heads query heads sharing num_key_value_heads key/value heads
// (each key/value head serves num_query_heads / num_key_value_heads query heads).
// EinsumDense projections, as Keras builds them: "query" (d, Hq, head_dim), "key" (d_k, Hkv,
// head_dim), ["gate" (d, Hq, head_dim) with use_gate], "value" (d_v, Hkv, head_dim),
// "attention_output" (Hq, head_dim, d), biases on their trailing axes with use_bias.
// Call: query (B, T, d), value (B, S, d), optional key (B, S, d_k), attention_mask (B, T, S),
// positional or by keyword as MultiHeadAttention; the masks attached to the inputs, the
// use_causal_mask / return_attention_scores options (scores (B, Hq, T, S)), dropout and the
// fully-masked-row behaviour are those of MultiHeadAttention. Output (B, T, d).
#pragma once
#include <optional>

#include "layers/attention_common.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct GroupQueryAttentionOptions {
  int64_t head_dim = 0;             // required, >= 1
  int64_t num_query_heads = 0;      // required, a multiple of num_key_value_heads
  int64_t num_key_value_heads = 0;  // required, >= 1
  double dropout = 0.0;
  bool use_bias = true;
  std::optional<int64_t> sliding_window;
  bool use_gate = false;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // must stay unset (NotImplementedError)
  ConstraintArg kernel_constraint;
  ConstraintArg bias_constraint;
  std::optional<int64_t> seed;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class GroupQueryAttentionImpl : public attention::ProjectionOwner {
 public:
  explicit GroupQueryAttentionImpl(GroupQueryAttentionOptions options);
  // Keras serializes the class under its Python name.
  std::string class_name() const override { return "GroupedQueryAttention"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  bool supports_masking() const override { return true; }
  json get_config() const override;
  const GroupQueryAttentionOptions& options() const { return options_; }

 protected:
  void check_input(const std::vector<Shape>& input_shapes) const override;

 private:
  GroupQueryAttentionOptions options_;
  Shape feature_dims_;  // query and key features at build
  std::shared_ptr<EinsumProjectionImpl> query_, key_, value_, gate_, output_;
};
KERAS_LAYER_HANDLE(GroupQueryAttention, GroupQueryAttentionOptions);

GroupQueryAttentionOptions group_query_attention_options_from_config(const json& config);

}  // namespace keras::layers
