// MultiHeadAttention (keras.layers.MultiHeadAttention), as Keras 3 builds it: EinsumDense
// projections "query" (d, heads, key_dim), "key" (d_k, heads, key_dim), ["gate" (d, heads,
// value_dim) with use_gate], "value" (d_v, heads, value_dim) and "attention_output" (heads,
// value_dim, *output_shape), each with a bias of its trailing axes when use_bias; the weights
// tree keys them query_dense, key_dense, _gate_dense, value_dense, output_dense.
//
// Call: inputs [query, value] or [query, value, key], or by keyword (CallArgs::keywords "key",
// "attention_mask"; "query"/"value" too). query (B, <seq dims>, d), value and key (B, <seq dims'>,
// d_v / d_k) with equal <seq dims'>. attention_mask (B, T, S) bool or numeric (nonzero attends).
// The masks attached to query, value and key join it as Keras's _compute_attention_mask does.
// CallArgs::options: use_causal_mask (bool), return_attention_scores (bool: a second output, the
// probabilities (B, heads, T, S), or (B, <other axes>, heads, <query axes>, <key axes>) for
// attention_axes). Output (B, <seq dims>, *output_shape or d), carrying the query's mask.
// Dropout (training only) drops probabilities. A fully masked query row averages the values
// uniformly when Keras takes its dot_product_attention path (no dropout, no scores returned,
// one attention axis of a rank-3 query) and gives zeros otherwise, as in Keras.
#pragma once
#include <optional>

#include "layers/attention_common.h"
#include "layers/layer_handle.h"

namespace keras::layers {

struct MultiHeadAttentionOptions {
  int64_t num_heads = 0;  // required, >= 1
  int64_t key_dim = 0;    // required, >= 1
  std::optional<int64_t> value_dim;  // default key_dim
  double dropout = 0.0;
  bool use_bias = true;
  std::optional<Shape> output_shape;  // trailing output extents; default: the query's last extent
  // Axes of the query the attention runs over (Keras's attention_axes); default all but the batch
  // and feature axes. Negative axes count as Keras counts them (rank - 1 + axis).
  std::optional<std::vector<int64_t>> attention_axes;
  std::optional<int64_t> sliding_window;  // attend only where |i - j| < sliding_window
  bool use_gate = false;                  // sigmoid gate on the attention output per head
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // must stay unset (NotImplementedError)
  ConstraintArg kernel_constraint;
  ConstraintArg bias_constraint;
  std::optional<int64_t> seed;  // seeds the dropout stream
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class MultiHeadAttentionImpl : public attention::ProjectionOwner {
 public:
  explicit MultiHeadAttentionImpl(MultiHeadAttentionOptions options);
  std::string class_name() const override { return "MultiHeadAttention"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  bool supports_masking() const override { return true; }
  json get_config() const override;
  const MultiHeadAttentionOptions& options() const { return options_; }
  // The attention axes in use (resolved once built; the options' otherwise).
  std::vector<int64_t> attention_axes() const { return axes_; }

  // Typed call: query, value, optional key and attention_mask (undefined = none).
  struct Result {
    Tensor output, scores;  // scores only with return_attention_scores
  };
  Result attend(const Tensor& query, const Tensor& value, const Tensor& key = {}, const Tensor& attention_mask = {},
                bool use_causal_mask = false, bool return_attention_scores = false, std::optional<bool> training = {});

 protected:
  void check_input(const std::vector<Shape>& input_shapes) const override;

 private:
  std::vector<int64_t> resolved_axes(int64_t query_rank) const;
  // The heads of unmasked self-attention (x is query, key and value) through one packed
  // projection: the query, key and value kernels side by side, one GEMM, then
  // ops::attention_heads_packed. Undefined where that path does not apply (the caller projects
  // separately). Results equal the separate path's up to rounding: the wider GEMM may block its
  // sums differently.
  Tensor packed_self_attention(const Tensor& x) const;

  MultiHeadAttentionOptions options_;
  std::vector<int64_t> axes_;
  Shape feature_dims_;  // query, value and key features at build
  std::shared_ptr<EinsumProjectionImpl> query_, key_, value_, gate_, output_;
};
KERAS_LAYER_HANDLE(MultiHeadAttention, MultiHeadAttentionOptions);

MultiHeadAttentionOptions multi_head_attention_options_from_config(const json& config);

}  // namespace keras::layers
