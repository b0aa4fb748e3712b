#include "keras/export/masks.h"

#include "backend/errors.h"
#include "layers/layer.h"

namespace keras::onnx {
namespace {

std::string where_of(const EmitCall& c) { return c.layer.where() + " ONNX export"; }

constexpr int64_t kBool = 9, kFloat = 1;  // ONNX TensorProto data types

std::string feature_mask(Graph& g, const EmitCall& c, const std::string& mask, const std::string& tag) {
  return g.add("Unsqueeze", {mask, g.constant_ints(c.hint(tag + "_axis"), {-1})}, {}, c.hint(tag));
}

bool is_recurrent(const std::string& cls) {
  return cls == "RNN" || cls == "LSTM" || cls == "GRU" || cls == "SimpleRNN" || cls.rfind("ConvLSTM", 0) == 0;
}
bool is_merge(const std::string& cls) {
  return cls == "Add" || cls == "Subtract" || cls == "Multiply" || cls == "Average" || cls == "Maximum" || cls == "Minimum";
}

// Keras Concatenate.compute_mask: each input's mask widened to the input's shape (ones where an
// input has none), concatenated along the axis, any() over the last axis.
std::string concatenate_mask(Graph& g, const EmitCall& c) {
  std::vector<std::string> wide;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Value& x = c.inputs[i];
    const std::string shape = g.add("Shape", {g.as_keras(x)}, {}, c.hint("mask_shape"));
    const std::string m =
        x.mask.empty() ? g.constant_scalar(c.hint("mask_one"), 1.f)
                       : feature_mask(g, c, g.add("Cast", {x.mask}, {attr("to", kFloat)}, c.hint("mask_float")), "mask_wide");
    wide.push_back(g.add("Expand", {m, shape}, {}, c.hint("mask_expanded")));
  }
  const std::string cat = g.add("Concat", wide, {attr("axis", c.config.value("axis", int64_t{-1}))}, c.hint("mask_concat"));
  return g.add("Cast", {g.reduce("ReduceMax", cat, {-1}, false, c.hint("mask_any"))}, {attr("to", kBool)}, c.hint("mask"));
}

}  // namespace

bool has_masks(const EmitCall& c) {
  for (const auto& v : c.inputs)
    if (!v.mask.empty()) return true;
  return false;
}

void propagate_masks(Graph& g, const EmitCall& c, std::vector<Value>& outs) {
  const Layer& layer = c.layer;
  if (!layer.supports_masking()) {
    for (auto& o : outs) o.mask.clear();
    return;
  }
  bool all_set = true;
  for (const auto& o : outs) all_set = all_set && !o.mask.empty();
  if (all_set || !has_masks(c)) return;  // nothing to compute: compute_mask of no masks is none
  const std::string cls = layer.class_name();
  const std::string& first = c.inputs[0].mask;
  std::vector<std::string> computed(outs.size());
  if (is_recurrent(cls) || cls == "Bidirectional") {
    // The sequence output(s) keep the input's mask with return_sequences; states carry none.
    const json inner = cls == "Bidirectional" ? layer.sublayers().at(0)->get_config() : c.config;
    if (inner.value("return_sequences", false)) {
      const json merge = c.config.value("merge_mode", json("concat"));
      const size_t n = cls == "Bidirectional" && (merge.is_null() || merge == "") ? 2 : 1;
      for (size_t i = 0; i < n && i < outs.size(); ++i) computed[i] = first;
    }
  } else if (is_merge(cls)) {
    std::string any;
    for (const auto& v : c.inputs) {
      if (v.mask.empty()) {
        any.clear();
        break;
      }
      any = any.empty() ? v.mask : g.add("Or", {any, v.mask}, {}, c.hint("mask_or"));
    }
    computed[0] = any;
  } else if (cls == "Concatenate") {
    computed[0] = concatenate_mask(g, c);
  } else if (cls.rfind("Global", 0) == 0) {
    // Pooling over the steps consumes the mask.
  } else {
    computed[0] = first;
  }
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].mask.empty()) outs[i].mask = computed[i];
}

std::string masked_merge(Graph& g, const EmitCall& c, const std::string& op_type) {
  const int rank = c.inputs[0].rank();
  for (const auto& v : c.inputs)
    if (v.rank() != rank)
      fail<NotImplementedError>(where_of(c), "masked inputs of one rank", shape_str(c.inputs[0].shape) + " and " + shape_str(v.shape));
  std::vector<std::string> xs, masks;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    xs.push_back(g.as_keras(c.inputs[i]));
    masks.push_back(c.inputs[i].mask.empty() ? "" : feature_mask(g, c, c.inputs[i].mask, "feature_mask"));
  }
  if (op_type == "Mul") {
    std::string out, any_kept;
    bool all_masked = true;
    for (size_t i = 0; i < xs.size(); ++i) {
      std::string x = xs[i];
      if (!masks[i].empty()) {
        x = g.add("Where", {masks[i], x, g.constant_scalar(c.hint("one"), 1.f)}, {}, c.hint("masked_as_one"));
        any_kept = any_kept.empty() ? masks[i] : g.add("Or", {any_kept, masks[i]}, {}, c.hint("any_kept"));
      } else {
        all_masked = false;
      }
      out = out.empty() ? x : g.add("Mul", {out, x}, {}, c.hint("Mul"));
    }
    if (!all_masked) return out;
    return g.add("Where", {any_kept, out, g.constant_scalar(c.hint("zero"), 0.f)}, {}, c.hint("kept_product"));
  }
  std::string out = xs[0], out_mask = masks[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    std::string x = xs[i];
    if (!masks[i].empty()) x = g.add("Where", {masks[i], x, out}, {}, c.hint("fill_masked"));
    if (!out_mask.empty()) out = g.add("Where", {out_mask, out, x}, {}, c.hint("fill_running"));
    out_mask = !masks[i].empty() && !out_mask.empty() ? g.add("Or", {out_mask, masks[i]}, {}, c.hint("running_mask")) : "";
    out = g.add(op_type, {out, x}, {}, c.hint(op_type));
  }
  return out;
}

std::string position_mask(Graph& g, const EmitCall& c, const Value& query, const Value& key, bool causal,
                          std::optional<int64_t> window) {
  auto scalar = [&](int64_t v, const std::string& tag) {
    return g.add("Squeeze", {g.constant_ints(c.hint(tag), {v})}, {}, c.hint(tag + "_scalar"));
  };
  // Range(0, length of axis 1) with that axis at `at` of a rank-3 result.
  auto positions = [&](const Value& v, const std::vector<int64_t>& expand, const std::string& tag) {
    const std::string shape = g.add("Shape", {g.as_keras(v)}, {}, c.hint(tag + "_shape"));
    const std::string length = g.add("Squeeze", {g.add("Gather", {shape, g.constant_ints(c.hint(tag + "_axis1"), {1})},
                                                       {attr("axis", int64_t{0})}, c.hint(tag + "_length1"))},
                                     {}, c.hint(tag + "_length"));
    const std::string range = g.add("Range", {scalar(0, tag + "_start"), length, scalar(1, tag + "_delta")}, {}, c.hint(tag + "_range"));
    return g.add("Unsqueeze", {range, g.constant_ints(c.hint(tag + "_expand"), expand)}, {}, c.hint(tag));
  };
  const std::string rows = positions(query, {0, -1}, "query_positions");  // (1, Tq, 1)
  const std::string cols = positions(key, {0, 1}, "key_positions");       // (1, 1, Tk)
  std::string keep;
  if (causal) keep = g.add("LessOrEqual", {cols, rows}, {}, c.hint("causal_mask"));
  if (window) {
    const std::string distance = g.add("Abs", {g.add("Sub", {rows, cols}, {}, c.hint("offset"))}, {}, c.hint("distance"));
    const std::string band = g.add("Less", {distance, g.constant_ints(c.hint("window"), {*window})}, {}, c.hint("window_mask"));
    keep = keep.empty() ? band : g.add("And", {keep, band}, {}, c.hint("causal_window_mask"));
  }
  return keep;
}

namespace {

// Masking: any(x != mask_value) over the features; masked steps become zeros, and the mask
// replaces any the input carried (Keras attaches it in call()).
std::vector<Value> emit_masking(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::string in = g.as_keras(x);
  const std::string mask_value = g.constant_scalar(c.hint("mask_value"), c.config.value("mask_value", 0.f));
  const std::string differs =
      g.add("Not", {g.add("Equal", {in, mask_value}, {}, c.hint("equal"))}, {}, c.hint("differs"));
  const std::string any = g.reduce("ReduceMax", g.add("Cast", {differs}, {attr("to", kFloat)}, c.hint("differs_float")), {-1}, true,
                                   c.hint("any_differs"));
  const std::string keep = g.add("Cast", {any}, {attr("to", kBool)}, c.hint("keep"));
  Value out = c.output(g.add("Where", {keep, in, g.constant_scalar(c.hint("zero"), 0.f)}, {}, c.hint("masked")));
  out.mask = g.add("Squeeze", {keep, g.constant_ints(c.hint("mask_axis"), {-1})}, {}, c.hint("mask"));
  return {out};
}

KERAS_REGISTER_ONNX_EMITTER("Masking", emit_masking);

}  // namespace
}  // namespace keras::onnx
