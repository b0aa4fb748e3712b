// ONNX emitters of MultiHeadAttention and Attention, decomposed into MatMul / Softmax.
// MultiHeadAttention: per head softmax(q k^T / sqrt(key_dim)) v, then the output projection.
// Supported: rank-3 query, value (and key) passed positionally, attention over axis 1 (Keras's
// default for sequences), no mask, causal mask, gate, sliding window or returned scores.
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

// Attention (Luong) and AdditiveAttention (Bahdanau, sum(scale * tanh(q_i + k_j))): scores q k^T ("dot", times `scale` with use_scale) or
// concat_score_weight * sum(tanh(scale * (q_i + k_j))) ("concat"), softmax over the keys (the
// causal mask subtracts 1e9, as Keras), then the weighted values; the scores as a second output
// with return_attention_scores. No value or query masks (they come from layers that do not export).
std::vector<Value> emit_attention(Graph& g, const EmitCall& c) {
  const json& cfg = c.config;
  if (!c.keywords.empty() || c.inputs.size() < 2 || c.inputs[0].rank() != 3)
    fail<NotImplementedError>(where_of(c), "rank-3 [query, value(, key)] without keyword tensors", "another call");
  const std::string q = g.as_keras(c.inputs[0]), v = g.as_keras(c.inputs[1]);
  const std::string k = c.inputs.size() > 2 ? g.as_keras(c.inputs[2]) : v;
  const bool scaled = cfg.value("use_scale", c.layer.class_name() == "AdditiveAttention");
  const std::string scale = scaled ? c.weight(g, "scale", [&] { return host_weight(c.layer, "scale"); }) : "";
  std::string s;
  if (c.layer.class_name() == "AdditiveAttention") {  // sum(scale * tanh(q_i + k_j)) over the features
    const std::string sum = g.add("Add", {g.add("Unsqueeze", {q, g.constant_ints(c.hint("axis_m2"), {-2})}, {}, c.hint("q_i")),
                                          g.add("Unsqueeze", {k, g.constant_ints(c.hint("axis_m3"), {-3})}, {}, c.hint("k_j"))},
                                  {}, c.hint("q_plus_k"));
    std::string t = g.add("Tanh", {sum}, {}, c.hint("tanh"));
    if (scaled) t = g.add("Mul", {t, scale}, {}, c.hint("scaled"));
    s = g.reduce("ReduceSum", t, {-1}, false, c.hint("scores"));
  } else if (cfg.value("score_mode", "dot") == "concat") {
    std::string sum = g.add("Add", {g.add("Unsqueeze", {q, g.constant_ints(c.hint("axis_m2"), {-2})}, {}, c.hint("q_i")),
                                    g.add("Unsqueeze", {k, g.constant_ints(c.hint("axis_m3"), {-3})}, {}, c.hint("k_j"))},
                          {}, c.hint("q_plus_k"));
    if (scaled) sum = g.add("Mul", {scale, sum}, {}, c.hint("scaled"));
    s = g.reduce("ReduceSum", g.add("Tanh", {sum}, {}, c.hint("tanh")), {-1}, false, c.hint("score_sum"));
    s = g.add("Mul", {c.weight(g, "concat_score_weight", [&] { return host_weight(c.layer, "concat_score_weight"); }), s}, {},
              c.hint("scores"));
  } else {
    s = g.add("MatMul", {q, g.add("Transpose", {k}, {attr("perm", std::vector<int64_t>{0, 2, 1})}, c.hint("k_t"))}, {},
              c.hint("scores"));
    if (scaled) s = g.add("Mul", {s, scale}, {}, c.hint("scaled_scores"));
  }
  if (flag(c.options, "use_causal_mask")) {
    const int64_t tq = c.inputs[0].shape[1], tv = (c.inputs.size() > 2 ? c.inputs[2] : c.inputs[1]).shape[1];
    if (tq < 0 || tv < 0) fail<NotImplementedError>(where_of(c), "known sequence lengths for the causal mask", "unknown");
    HostTensor penalty{{tq, tv}, {}};
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tv; ++j) penalty.data.push_back(j <= i ? 0.f : 1e9f);
    s = g.add("Sub", {s, g.constant(c.hint("causal_penalty"), penalty)}, {}, c.hint("causal_scores"));
  }
  const std::string w = g.add("Softmax", {s}, {attr("axis", int64_t{-1})}, c.hint("weights"));
  std::vector<Value> out{c.output(g.add("MatMul", {w, v}, {}, c.hint("MatMul")))};
  if (flag(c.options, "return_attention_scores")) out.push_back(c.output(w, false, 1));
  return out;
}

KERAS_REGISTER_ONNX_EMITTER("MultiHeadAttention", emit_multi_head_attention);
KERAS_REGISTER_ONNX_EMITTER("Attention", emit_attention);
KERAS_REGISTER_ONNX_EMITTER("AdditiveAttention", emit_attention);

}  // namespace
}  // namespace keras::onnx
