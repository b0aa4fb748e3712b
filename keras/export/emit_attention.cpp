// ONNX emitters of Attention and AdditiveAttention, decomposed into MatMul / Softmax
// (MultiHeadAttention and GroupQueryAttention: emit_multi_head.cpp).
#include <cmath>

#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "keras/export/masks.h"

namespace keras::onnx {
namespace {

std::string where_of(const EmitCall& c) { return c.layer.where() + " ONNX export"; }

bool flag(const json& options, const char* key) { return options.contains(key) && options[key].is_boolean() && options[key].get<bool>(); }

// Attention (Luong) and AdditiveAttention (Bahdanau, sum(scale * tanh(q_i + k_j))): scores q k^T ("dot", times `scale` with use_scale) or
// concat_score_weight * sum(tanh(scale * (q_i + k_j))) ("concat"), softmax over the keys (the
// causal mask subtracts 1e9, as Keras), then the weighted values; the scores as a second output
// with return_attention_scores. The masks the inputs carry apply as Keras applies them.
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
  // Keras's _calculate_score_mask: the value's mask (B, 1, Tv) and-ed with the causal mask;
  // masked scores get score - 1e9 (a subtraction, as Keras: not a replacement).
  const bool causal = flag(c.options, "use_causal_mask");
  std::string keep;
  if (!c.inputs[1].mask.empty())
    keep = g.add("Unsqueeze", {c.inputs[1].mask, g.constant_ints(c.hint("vmask_axis"), {-2})}, {}, c.hint("value_mask"));
  if (causal) {
    const std::string positions = position_mask(g, c, c.inputs[0], c.inputs.size() > 2 ? c.inputs[2] : c.inputs[1], true, std::nullopt);
    keep = keep.empty() ? positions : g.add("And", {keep, positions}, {}, c.hint("score_mask"));
  }
  if (!keep.empty()) {
    const std::string penalty = g.add("Where", {keep, g.constant_scalar(c.hint("no_penalty"), 0.f), g.constant_scalar(c.hint("big"), 1e9f)},
                                      {}, c.hint("penalty"));
    s = g.add("Sub", {s, penalty}, {}, c.hint("masked_scores"));
  }
  const std::string w = g.add("Softmax", {s}, {attr("axis", int64_t{-1})}, c.hint("weights"));
  std::string y = g.add("MatMul", {w, v}, {}, c.hint("MatMul"));
  // Masked query rows output zeros; the output carries the query's mask (the walk's default).
  if (!c.inputs[0].mask.empty())
    y = g.add("Where", {g.add("Unsqueeze", {c.inputs[0].mask, g.constant_ints(c.hint("qmask_axis"), {-1})}, {}, c.hint("query_mask")), y,
                        g.constant_scalar(c.hint("zero"), 0.f)},
              {}, c.hint("masked_output"));
  std::vector<Value> out{c.output(y)};
  if (flag(c.options, "return_attention_scores")) out.push_back(c.output(w, false, 1));
  return out;
}

KERAS_REGISTER_ONNX_EMITTER("Attention", emit_attention);
KERAS_REGISTER_ONNX_EMITTER("AdditiveAttention", emit_attention);

}  // namespace
}  // namespace keras::onnx
