// ONNX emitter of MultiHeadAttention, decomposed into MatMul / Softmax: per head,
// softmax(q k^T / sqrt(key_dim)) v, then the output projection. Supported: rank-3 query, value
// (and key) passed positionally, attention over axis 1 (Keras's default for sequences), no mask,
// causal mask, gate, sliding window or returned scores.
#include <cmath>

#include "backend/errors.h"
#include "keras/export/emitter.h"

namespace keras::onnx {
namespace {

std::string where_of(const EmitCall& c) { return c.layer.where() + " ONNX export"; }

bool flag(const json& options, const char* key) { return options.contains(key) && options[key].is_boolean() && options[key].get<bool>(); }

// x (N, T, D) @ kernel (D, H, K) + bias (H, K) -> (N, H, T, K); `key_layout`: (N, H, K, T).
std::string project(Graph& g, const EmitCall& c, const Value& x, const std::string& sub, int64_t heads, int64_t dim,
                    bool use_bias, bool key_layout) {
  const std::string w = c.weight(g, sub + "/kernel_2d", [&] {
    HostTensor k = host_weight(c.layer, sub + "/kernel");
    k.shape = {k.shape[0], heads * dim};
    return k;
  });
  std::string y = g.add("MatMul", {g.as_keras(x), w}, {}, c.hint(sub + "/MatMul"));
  if (use_bias) {
    const std::string b = c.weight(g, sub + "/bias_1d", [&] {
      HostTensor t = host_weight(c.layer, sub + "/bias");
      t.shape = {heads * dim};
      return t;
    });
    y = g.add("Add", {y, b}, {}, c.hint(sub + "/BiasAdd"));
  }
  y = g.add("Reshape", {y, g.constant_ints(c.hint(sub + "/heads"), {0, 0, heads, dim})}, {}, c.hint(sub + "/split_heads"));
  const std::vector<int64_t> perm = key_layout ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
  return g.add("Transpose", {y}, {attr("perm", perm)}, c.hint(sub + "/heads_first"));
}

std::vector<Value> emit_multi_head_attention(Graph& g, const EmitCall& c) {
  const json& cfg = c.config;
  const Value& query = c.inputs[0];
  const bool plain = c.keywords.empty() && (c.inputs.size() == 2 || c.inputs.size() == 3) && query.rank() == 3 &&
                     !flag(c.options, "use_causal_mask") && !flag(c.options, "return_attention_scores") &&
                     !cfg.value("use_gate", false) && (!cfg.contains("sliding_window") || cfg["sliding_window"].is_null());
  const auto& axes = cfg.contains("attention_axes") ? cfg["attention_axes"] : json(nullptr);
  const bool axis1 = axes.is_null() || (axes.is_array() && axes.size() == 1 && (axes[0] == 1 || axes[0] == -2));
  if (!plain || !axis1)
    fail<NotImplementedError>(where_of(c),
                              "a rank-3 self/cross attention over axis 1 without masks, gate, sliding window or scores",
                              "another call (" + cfg.dump() + ", options " + c.options.dump() + ")");
  const int64_t heads = cfg.at("num_heads").get<int64_t>(), key_dim = cfg.at("key_dim").get<int64_t>();
  const int64_t value_dim = cfg.contains("value_dim") && !cfg["value_dim"].is_null() ? cfg["value_dim"].get<int64_t>() : key_dim;
  const bool bias = cfg.value("use_bias", true);
  const Value& value = c.inputs[1];
  const Value& key = c.inputs.size() == 3 ? c.inputs[2] : value;
  std::string q = project(g, c, query, "query", heads, key_dim, bias, false);
  q = g.add("Mul", {q, g.constant_scalar(c.hint("scale"), static_cast<float>(1.0 / std::sqrt(static_cast<double>(key_dim))))}, {},
            c.hint("scaled_query"));
  const std::string k = project(g, c, key, "key", heads, key_dim, bias, true);
  const std::string v = project(g, c, value, "value", heads, value_dim, bias, false);
  const std::string scores = g.add("Softmax", {g.add("MatMul", {q, k}, {}, c.hint("scores"))}, {attr("axis", int64_t{-1})},
                                   c.hint("attention"));
  std::string o = g.add("MatMul", {scores, v}, {}, c.hint("attended"));
  o = g.add("Transpose", {o}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}, c.hint("heads_last"));
  o = g.add("Reshape", {o, g.constant_ints(c.hint("merge_shape"), {0, 0, heads * value_dim})}, {}, c.hint("merge_heads"));
  const std::string wo = c.weight(g, "attention_output/kernel_2d", [&] {
    HostTensor t = host_weight(c.layer, "attention_output/kernel");
    t.shape = {heads * value_dim, static_cast<int64_t>(t.data.size()) / (heads * value_dim)};
    return t;
  });
  o = g.add("MatMul", {o, wo}, {}, c.hint("attention_output/MatMul"));
  if (bias) o = g.add("Add", {o, c.weight(g, "attention_output/bias", [&] { return host_weight(c.layer, "attention_output/bias"); })}, {},
                      c.hint("attention_output/BiasAdd"));
  const Shape& out = c.outputs[0].shape;
  if (out.size() != 3)  // output_shape with several extents: split the last axis
    fail<NotImplementedError>(where_of(c), "an output of rank 3", shape_str(out));
  return {c.output(o)};
}

KERAS_REGISTER_ONNX_EMITTER("MultiHeadAttention", emit_multi_head_attention);

}  // namespace
}  // namespace keras::onnx
