// Attention (keras.layers.Attention): Luong-style dot-product attention over
// inputs [query (B, Tq, dim), value (B, Tv, dv)] or [query, value, key (B, Tv, dim)].
//   scores = query @ key^T (* scale)                              score_mode "dot"
//   scores = concat_score_weight * sum(tanh(scale * (q_i + k_j)))  score_mode "concat"
//   output = softmax(scores) @ value                               (B, Tq, dv)
// Weights: scale () with use_scale, concat_score_weight () with score_mode "concat" (both ones).
// Masks (the inputs' attached ones, Keras's mask=[query_mask, value_mask]): masked values get
// score - 1e9 (Keras's subtraction, so a fully masked row stays a softmax of its scores); masked
// query rows output zeros, and the output carries the query's mask. CallArgs::options:
// use_causal_mask, return_attention_scores (a second output, the probabilities (B, Tq, Tv) after
// dropout, as Keras returns them). Dropout on the probabilities while training.
#pragma once
#include <optional>

#include "layers/attention_common.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct AttentionOptions {
  bool use_scale = false;
  std::string score_mode = "dot";  // "dot" or "concat"; ValueError otherwise
  double dropout = 0.0;             // in [0, 1)
  std::optional<int64_t> seed;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class AttentionImpl : public Layer {
 public:
  explicit AttentionImpl(AttentionOptions options);
  std::string class_name() const override { return "Attention"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  bool supports_masking() const override { return true; }
  json get_config() const override;
  const AttentionOptions& options() const { return options_; }

 protected:
  // The unnormalized scores (B, Tq, Tv) of query (B, Tq, dim) and key (B, Tv, dim).
  virtual Tensor scores(const Tensor& query, const Tensor& key) const;

  void check_input(const std::vector<Shape>& input_shapes) const;

  AttentionOptions options_;
  Variable scale_, concat_score_weight_;
};
KERAS_LAYER_HANDLE(Attention, AttentionOptions);

AttentionOptions attention_options_from_config(const json& config);

}  // namespace keras::layers
