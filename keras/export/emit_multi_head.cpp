// ONNX emitters of MultiHeadAttention and GroupQueryAttention (Keras class GroupedQueryAttention),
// decomposed into MatMul / Softmax: per head softmax(q k^T / sqrt(key_dim)) v, then the output
// projection. GroupQueryAttention repeats each key/value head num_query_heads /
// num_key_value_heads times (Keras's ops.repeat on the head axis) before the products.
//
// Masks, as Keras's _compute_attention_mask: the query's (B, T, 1), the value's and key's
// (B, 1, S), the causal mask, the sliding-window band and the attention_mask given by keyword,
// and-ed; masked scores become -1e9 (Keras's fused path), and the probabilities of masked entries
// are zeroed where Keras takes its Softmax-layer path (dropout configured, or returned scores).
// Any attention_axes of MultiHeadAttention (the attention axes gathered and flattened as Keras's
// einsums do), masks too: the combined mask gets size-1 axes inserted where Keras's
// _masked_softmax inserts them (before the query's attention axes, until it has the scores'
// rank), as layers/attention_common.cpp does, and is broadcast to the scores.
#include <algorithm>
#include <cmath>

#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "keras/export/masks.h"
#include "layers/attention_common.h"
#include "layers/multi_head_attention.h"

namespace keras::onnx {
namespace {

std::string where_of(const EmitCall& c) { return c.layer.where() + " ONNX export"; }

bool flag(const json& options, const char* key) { return options.contains(key) && options[key].is_boolean() && options[key].get<bool>(); }

// x (N, T, D) @ kernel (D, H, K) + bias (H, K) -> (N, T, H, K).
std::string project(Graph& g, const EmitCall& c, const Value& x, const std::string& sub, int64_t heads, int64_t dim,
                    bool use_bias) {
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
  std::vector<int64_t> split(static_cast<size_t>(x.rank() - 1), 0);  // 0: keep the leading extents
  split.push_back(heads);
  split.push_back(dim);
  return g.add("Reshape", {y, g.constant_ints(c.hint(sub + "/heads"), split)}, {}, c.hint(sub + "/split_heads"));
}

// Keras's einsum layout for attention over `axes` of projected (B, seq..., H, K) tensors:
// the permutation that gathers (batch-like axes, heads, attention axes, channels), as
// layers/attention_common.cpp does.
std::vector<int64_t> gather_order(int64_t rank, const std::vector<int64_t>& axes) {
  std::vector<int64_t> perm;
  for (int64_t a = 0; a + 2 < rank; ++a)
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) perm.push_back(a);
  perm.push_back(rank - 2);
  perm.insert(perm.end(), axes.begin(), axes.end());
  perm.push_back(rank - 1);
  return perm;
}

// (B, seq..., H, K) gathered and its attention axes flattened: (lead..., T, K), or with
// `channels_first` (lead..., K, T) (the key, ready for q @ k).
std::string gathered(Graph& g, const EmitCall& c, const std::string& x, int64_t rank, const std::vector<int64_t>& axes, int64_t dim,
                     bool channels_first, const std::string& what) {
  std::vector<int64_t> perm = gather_order(rank, axes);
  const size_t lead = perm.size() - axes.size() - 1;
  if (channels_first) perm.insert(perm.begin() + static_cast<std::ptrdiff_t>(lead), perm.back()), perm.pop_back();
  std::string y = g.add("Transpose", {x}, {attr("perm", perm)}, c.hint(what + "/gathered"));
  if (axes.size() == 1) return y;
  std::vector<int64_t> flat(lead, 0);
  if (channels_first) flat.insert(flat.end(), {dim, -1});
  else flat.insert(flat.end(), {-1, dim});
  return g.add("Reshape", {y, g.constant_ints(c.hint(what + "/flat_shape"), flat)}, {}, c.hint(what + "/flattened"));
}

std::string transpose(Graph& g, const std::string& x, std::vector<int64_t> perm, const std::string& hint) {
  return g.add("Transpose", {x}, {attr("perm", std::move(perm))}, hint);
}

// (N, Hkv, a, b) -> (N, Hkv * times, a, b), each head repeated `times` times in place;
// `merged` is the Reshape target (N, H, a, b) with 0 for N and -1 for the one unknown extent.
std::string repeat_heads(Graph& g, const EmitCall& c, const std::string& x, int64_t times, const std::string& what,
                         const std::vector<int64_t>& merged) {
  if (times == 1) return x;
  const std::string e = g.add("Expand", {g.add("Unsqueeze", {x, g.constant_ints(c.hint(what + "_axis2"), {2})}, {}, c.hint(what + "_5d")),
                                         g.constant_ints(c.hint(what + "_times"), {1, 1, times, 1, 1})},
                              {}, c.hint(what + "_repeated"));
  return g.add("Reshape", {e, g.constant_ints(c.hint(what + "_merge"), merged)}, {}, c.hint(what + "_heads"));
}

std::string mask_and(Graph& g, const std::string& a, const std::string& b, const std::string& hint) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return g.add("And", {a, b}, {}, hint);
}

struct HeadsSpec {
  int64_t query_heads = 0, kv_heads = 0, key_dim = 0, value_dim = 0;
  bool bias = true, gate = false, zero_masked = false;
  std::optional<int64_t> window;
  std::vector<int64_t> axes{1};  // attention axes of the query (Keras's resolved attention_axes)
};

// Keras's _compute_attention_mask: the masks and-ed with numpy broadcasting, bool, and their
// rank (the largest of them); "" when nothing masks. With rank-3 calls it is (B or 1, T, S).
std::pair<std::string, int64_t> combined_mask(Graph& g, const EmitCall& c, const HeadsSpec& spec, const Value& query,
                                              const Value& value, const Value* key, const Value* given) {
  std::string mask;
  int64_t rank = 0;
  auto with = [&](const std::string& m, int64_t m_rank, const std::string& hint) {
    mask = mask_and(g, mask, m, c.hint(hint));
    rank = std::max(rank, m_rank);
  };
  if (!query.mask.empty())
    with(g.add("Unsqueeze", {query.mask, g.constant_ints(c.hint("qmask_axis"), {-1})}, {}, c.hint("query_mask")), query.rank(), "");
  if (!value.mask.empty())
    with(g.add("Unsqueeze", {value.mask, g.constant_ints(c.hint("vmask_axis"), {-2})}, {}, c.hint("value_mask")), value.rank(),
         "mask_qv");
  if (key && !key->mask.empty())
    with(g.add("Unsqueeze", {key->mask, g.constant_ints(c.hint("kmask_axis"), {-2})}, {}, c.hint("key_mask")), key->rank(),
         "mask_qvk");
  const bool causal = flag(c.options, "use_causal_mask");
  if (causal || spec.window) with(position_mask(g, c, query, key ? *key : value, causal, spec.window), 3, "mask_positions");
  if (given) {
    const std::string m = g.add("Cast", {g.as_keras(*given)}, {attr("to", int64_t{9})}, c.hint("attention_mask"));
    mask = mask_and(g, m, mask, c.hint("mask_given"));
    rank = std::max<int64_t>(rank, given->rank());
  }
  return {mask, rank};
}

// The combined mask of rank `rank` as a bool tensor of the scores' shape (lead..., Tq, Tk), the
// attention extents flattened: size-1 axes inserted at rank - 2 * axes (Keras's
// mask_expansion_axis) until it has the unflattened scores' rank lead + 2 * axes, then broadcast.
// `q_att` and `k_att` are the query's and key's attention extents (known when there are several).
std::string mask_for_scores(Graph& g, const EmitCall& c, std::string mask, int64_t rank, const std::string& scores, size_t lead,
                            const Shape& q_att, const Shape& k_att) {
  const auto n = static_cast<int64_t>(q_att.size());
  const int64_t full_rank = static_cast<int64_t>(lead) + 2 * n;
  for (int k = 0; rank < full_rank; ++rank, ++k) {
    const int64_t axis = rank - 2 * n;
    if (axis < -(rank + 1))
      fail<ShapeError>(where_of(c), "an attention mask that expands to the scores' rank " + std::to_string(full_rank),
                       "a mask of rank " + std::to_string(rank), "Keras's attention_mask is (B, T, S).");
    mask = g.add("Unsqueeze", {mask, g.constant_ints(c.hint("mask_axis" + std::to_string(k)), {axis})}, {},
                 c.hint("mask_expanded" + std::to_string(k)));
  }
  if (n == 1) return mask;  // the scores' own rank: Where broadcasts it
  for (const Shape* att : {&q_att, &k_att})
    for (int64_t d : *att)
      if (d < 0) fail<NotImplementedError>(where_of(c), "known attention extents under a mask", shape_str(*att));
  const std::string shape = g.add("Shape", {scores}, {}, c.hint("scores_shape_now"));
  const std::string lead_dims = g.add("Slice", {shape, g.constant_ints(c.hint("lead_start"), {0}),
                                                g.constant_ints(c.hint("lead_end"), {static_cast<int64_t>(lead)})},
                                      {}, c.hint("lead_dims"));
  Shape att = q_att;
  att.insert(att.end(), k_att.begin(), k_att.end());
  const std::string full = g.add("Concat", {lead_dims, g.constant_ints(c.hint("attention_dims"), att)}, {attr("axis", int64_t{0})},
                                 c.hint("full_scores_shape"));
  const std::string expanded = g.add("Expand", {mask, full}, {}, c.hint("mask_full"));
  return g.add("Reshape", {expanded, shape}, {}, c.hint("mask_flat"));
}

std::vector<Value> emit_heads(Graph& g, const EmitCall& c, const HeadsSpec& spec) {
  const auto slots = layers::attention::input_slots(c.inputs.size(), c.keywords, where_of(c));
  auto at = [&](int slot) { return slot >= 0 ? &c.inputs[static_cast<size_t>(slot)] : nullptr; };
  const Value& query = *at(slots.query);
  const Value& value = *at(slots.value);
  const Value& key = slots.key >= 0 ? *at(slots.key) : value;
  const Value* given = at(slots.attention_mask);
  const int64_t hq = spec.query_heads, hkv = spec.kv_heads, rank = query.rank() + 1;  // rank of the projections
  const std::vector<int64_t>& axes = spec.axes;
  const bool sequence = query.rank() == 3 && axes == std::vector<int64_t>{1};
  if (value.rank() != query.rank() || key.rank() != query.rank())
    fail<NotImplementedError>(where_of(c), "query, value and key of one rank",
                              shape_str(query.shape) + ", " + shape_str(value.shape) + ", " + shape_str(key.shape));
  const auto [mask, mask_rank] = combined_mask(g, c, spec, query, value, slots.key >= 0 ? &key : nullptr, given);
  // The attention extents of the query (to unflatten the result) and of the key (the scores).
  Shape q_att, k_att;
  for (int64_t a : axes) q_att.push_back(query.shape[static_cast<size_t>(a)]), k_att.push_back(key.shape[static_cast<size_t>(a)]);
  for (int64_t d : q_att)
    if (d < 0 && axes.size() > 1) fail<NotImplementedError>(where_of(c), "known attention extents", shape_str(query.shape));

  std::string q = gathered(g, c, project(g, c, query, "query", hq, spec.key_dim, spec.bias), rank, axes, spec.key_dim, false, "query");
  q = g.add("Mul", {q, g.constant_scalar(c.hint("scale"), static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.key_dim))))}, {},
            c.hint("scaled_query"));
  std::string k = gathered(g, c, project(g, c, key, "key", hkv, spec.key_dim, spec.bias), rank, axes, spec.key_dim, true, "key");
  std::string v = gathered(g, c, project(g, c, value, "value", hkv, spec.value_dim, spec.bias), rank, axes, spec.value_dim, false, "value");
  k = repeat_heads(g, c, k, hq / hkv, "key", {0, hq, spec.key_dim, -1});  // GroupQueryAttention: rank-3 calls only
  v = repeat_heads(g, c, v, hq / hkv, "value", {0, hq, -1, spec.value_dim});
  std::string scores = g.add("MatMul", {q, k}, {}, c.hint("scores"));  // (lead..., T, S)
  const std::vector<int64_t> perm = gather_order(rank, axes);
  const size_t lead = perm.size() - axes.size() - 1;  // batch-like axes and the heads
  std::string full_mask;
  if (!mask.empty()) {
    full_mask = mask_for_scores(g, c, mask, mask_rank, scores, lead, q_att, k_att);
    scores = g.add("Where", {full_mask, scores, g.constant_scalar(c.hint("masked_score"), -1e9f)}, {}, c.hint("masked_scores"));
  }
  std::string probs = g.add("Softmax", {scores}, {attr("axis", int64_t{-1})}, c.hint("attention"));
  // Keras's Softmax-layer path (dropout, returned scores, or not one sequence axis of a rank-3
  // call) zeroes masked probabilities.
  if (!full_mask.empty() && (spec.zero_masked || !sequence))
    probs = g.add("Where", {full_mask, probs, g.constant_scalar(c.hint("zero"), 0.f)}, {}, c.hint("masked_attention"));
  // Back to (B, seq..., H, Dv): unflatten the attention axes, then invert the gathering.
  std::string o = g.add("MatMul", {probs, v}, {}, c.hint("attended"));
  if (axes.size() > 1) {
    std::vector<int64_t> unflat(lead, 0);
    unflat.insert(unflat.end(), q_att.begin(), q_att.end());
    unflat.push_back(spec.value_dim);
    o = g.add("Reshape", {o, g.constant_ints(c.hint("unflat_shape"), unflat)}, {}, c.hint("unflattened"));
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  o = transpose(g, o, inverse, c.hint("heads_last"));
  if (spec.gate)
    o = g.add("Mul", {o, g.add("Sigmoid", {project(g, c, query, "gate", hq, spec.value_dim, spec.bias)}, {}, c.hint("gate/sigmoid"))}, {},
              c.hint("gated"));
  std::vector<int64_t> merged(static_cast<size_t>(query.rank() - 1), 0);
  merged.push_back(hq * spec.value_dim);
  o = g.add("Reshape", {o, g.constant_ints(c.hint("merge_shape"), merged)}, {}, c.hint("merge_heads"));
  const std::string wo = c.weight(g, "attention_output/kernel_2d", [&] {
    HostTensor t = host_weight(c.layer, "attention_output/kernel");
    t.shape = {hq * spec.value_dim, static_cast<int64_t>(t.data.size()) / (hq * spec.value_dim)};
    return t;
  });
  o = g.add("MatMul", {o, wo}, {}, c.hint("attention_output/MatMul"));
  if (spec.bias)
    o = g.add("Add", {o, c.weight(g, "attention_output/bias_1d", [&] {
                        HostTensor b = host_weight(c.layer, "attention_output/bias");
                        b.shape = {static_cast<int64_t>(b.data.size())};
                        return b;
                      })},
              {}, c.hint("attention_output/BiasAdd"));
  // output_shape with several extents: the last axis split into them.
  const Shape& out_shape = c.outputs[0].shape;
  if (out_shape.size() != static_cast<size_t>(query.rank())) {
    std::vector<int64_t> split(static_cast<size_t>(query.rank() - 1), 0);
    split.insert(split.end(), out_shape.begin() + query.rank() - 1, out_shape.end());
    o = g.add("Reshape", {o, g.constant_ints(c.hint("output_shape"), split)}, {}, c.hint("output"));
  }
  std::vector<Value> out{c.output(o)};
  if (flag(c.options, "return_attention_scores")) {
    if (axes.size() > 1) {
      for (int64_t d : k_att)
        if (d < 0) fail<NotImplementedError>(where_of(c), "known key attention extents for the scores", shape_str(key.shape));
      std::vector<int64_t> full(lead, 0);
      full.insert(full.end(), q_att.begin(), q_att.end());
      full.insert(full.end(), k_att.begin(), k_att.end());
      probs = g.add("Reshape", {probs, g.constant_ints(c.hint("scores_shape"), full)}, {}, c.hint("scores_unflattened"));
    }
    out.push_back(c.output(probs, false, 1));
  }
  return out;
}

std::optional<int64_t> window_of(const json& cfg) {
  if (!cfg.contains("sliding_window") || cfg["sliding_window"].is_null()) return std::nullopt;
  return cfg["sliding_window"].get<int64_t>();
}

std::vector<Value> emit_multi_head_attention(Graph& g, const EmitCall& c) {
  const json& cfg = c.config;
  HeadsSpec s;
  s.query_heads = s.kv_heads = cfg.at("num_heads").get<int64_t>();
  s.key_dim = cfg.at("key_dim").get<int64_t>();
  s.value_dim = cfg.contains("value_dim") && !cfg["value_dim"].is_null() ? cfg["value_dim"].get<int64_t>() : s.key_dim;
  s.bias = cfg.value("use_bias", true);
  s.gate = cfg.value("use_gate", false);
  s.window = window_of(cfg);
  if (const auto* mha = dynamic_cast<const layers::MultiHeadAttentionImpl*>(&c.layer)) s.axes = mha->attention_axes();
  // Keras's Softmax-layer path (taken with dropout, returned scores or several sequence axes)
  // zeroes masked probabilities.
  s.zero_masked = cfg.value("dropout", 0.0) > 0.0 || flag(c.options, "return_attention_scores");
  return emit_heads(g, c, s);
}

std::vector<Value> emit_group_query_attention(Graph& g, const EmitCall& c) {
  const json& cfg = c.config;
  HeadsSpec s;
  s.query_heads = cfg.at("num_query_heads").get<int64_t>();
  s.kv_heads = cfg.at("num_key_value_heads").get<int64_t>();
  s.key_dim = s.value_dim = cfg.at("head_dim").get<int64_t>();
  s.bias = cfg.value("use_bias", true);
  s.gate = cfg.value("use_gate", false);
  s.window = window_of(cfg);
  s.zero_masked = cfg.value("dropout", 0.0) > 0.0 || flag(c.options, "return_attention_scores");
  return emit_heads(g, c, s);
}

KERAS_REGISTER_ONNX_EMITTER("MultiHeadAttention", emit_multi_head_attention);
KERAS_REGISTER_ONNX_EMITTER("GroupedQueryAttention", emit_group_query_attention);

}  // namespace
}  // namespace keras::onnx
