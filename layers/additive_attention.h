// AdditiveAttention (keras.layers.AdditiveAttention): Bahdanau-style attention, the Attention
// layer with scores = sum(scale * tanh(q_i + k_j)) over the feature axis. Weight: scale (dim,),
// glorot_uniform, with use_scale (default true). Inputs, masks, call options and outputs as
// Attention (layers/attention.h).
#pragma once
#include "layers/attention.h"

namespace keras::layers {

struct AdditiveAttentionOptions {
  bool use_scale = true;
  double dropout = 0.0;  // in [0, 1)
  std::optional<int64_t> seed;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class AdditiveAttentionImpl : public AttentionImpl {
 public:
  explicit AdditiveAttentionImpl(AdditiveAttentionOptions options);
  std::string class_name() const override { return "AdditiveAttention"; }
  void build(const std::vector<Shape>& input_shapes) override;
  json get_config() const override;

 protected:
  Tensor scores(const Tensor& query, const Tensor& key) const override;
};
KERAS_LAYER_HANDLE(AdditiveAttention, AdditiveAttentionOptions);

AdditiveAttentionOptions additive_attention_options_from_config(const json& config);

}  // namespace keras::layers
