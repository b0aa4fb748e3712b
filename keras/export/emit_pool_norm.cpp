// ONNX emitters of pooling (MaxPool / AveragePool channels-first, global pooling as reductions)
// and normalization layers (BatchNormalization in inference form, LayerNormalization,
// UnitNormalization, GroupNormalization).
#include <cmath>

#include "backend/errors.h"
#include "backend/ops_conv.h"
#include "keras/export/emitter.h"

namespace keras::onnx {
namespace {

// MaxPooling1D/2D, AveragePooling1D/2D. TF's "same" pooling ignores the padding (max) and
// averages over the real cells only, as ONNX's pads with count_include_pad=0.
std::vector<Value> emit_pool(Graph& g, const EmitCall& c, const std::string& op_type) {
  const Value& x = c.inputs[0];
  const bool keras_cf = c.config.value("data_format", "channels_last") == "channels_first";
  const std::string in = keras_cf ? g.as_keras(x) : g.as_channels_first(x);
  const size_t n = static_cast<size_t>(x.rank() - 2);
  const std::vector<int64_t> pool = config_ints(c.config, "pool_size", n);
  const std::vector<int64_t> strides =
      c.config.contains("strides") && !c.config["strides"].is_null() ? config_ints(c.config, "strides", n) : pool;
  std::vector<Attr> attrs{attr("kernel_shape", pool), attr("strides", strides)};
  std::vector<int64_t> pads(2 * n, 0);
  bool auto_pad = false;
  for (size_t i = 0; i < n; ++i) {
    const int64_t extent = x.shape[keras_cf ? 2 + i : 1 + i];
    const std::string padding = c.config.value("padding", "valid");
    if (padding == "same" && extent < 0) auto_pad = true;
    else std::tie(pads[i], pads[n + i]) = ops::conv_pads(extent, pool[i], padding, strides[i], 1);
  }
  attrs.push_back(auto_pad ? attr("auto_pad", "SAME_UPPER") : attr("pads", pads));
  return {c.output(g.add(op_type, {in}, std::move(attrs), c.hint(op_type)), !keras_cf)};
}

std::vector<Value> emit_max_pool(Graph& g, const EmitCall& c) { return emit_pool(g, c, "MaxPool"); }
std::vector<Value> emit_avg_pool(Graph& g, const EmitCall& c) { return emit_pool(g, c, "AveragePool"); }

// Global pooling: a reduction over the spatial axes of whichever layout the input has.
std::vector<Value> emit_global_pool(Graph& g, const EmitCall& c, const std::string& op_type) {
  const Value& x = c.inputs[0];
  const bool keras_cf = c.config.value("data_format", "channels_last") == "channels_first";
  const bool keepdims = c.config.value("keepdims", false);
  const std::string in = keras_cf ? g.as_keras(x) : x.name;
  const bool onnx_cf = keras_cf || x.channels_first;
  std::vector<int64_t> axes;
  for (int64_t a = onnx_cf ? 2 : 1; a < (onnx_cf ? x.rank() : x.rank() - 1); ++a) axes.push_back(a);
  const std::string y = g.reduce(op_type, in, axes, keepdims, c.hint(op_type));
  // Without keepdims the result is (N, C) in both layouts; with them it keeps the input's.
  return {c.output(y, keepdims && x.channels_first && !keras_cf)};
}

// With a mask (GlobalAveragePooling1D, the only global pooling that reads one): the sum over
// the kept steps over their count, as Keras (0 / 0 = NaN for a row with every step masked).
std::vector<Value> emit_global_avg(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  if (x.mask.empty() || !c.layer.supports_masking()) return emit_global_pool(g, c, "ReduceMean");
  if (c.config.value("data_format", "channels_last") == "channels_first")
    fail<NotImplementedError>(c.layer.where() + " ONNX export", "data_format channels_last with a mask", "channels_first");
  const bool keepdims = c.config.value("keepdims", false);
  const std::string keep = g.add("Unsqueeze", {x.mask, g.constant_ints(c.hint("mask_axis"), {-1})}, {}, c.hint("keep"));
  const std::string kept = g.add("Where", {keep, g.as_keras(x), g.constant_scalar(c.hint("zero"), 0.f)}, {}, c.hint("kept"));
  const std::string count = g.reduce("ReduceSum", g.add("Cast", {keep}, {attr("to", int64_t{1})}, c.hint("keep_float")), {1}, keepdims,
                                     c.hint("count"));
  return {c.output(g.add("Div", {g.reduce("ReduceSum", kept, {1}, keepdims, c.hint("sum")), count}, {}, c.hint("masked_mean")))};
}
std::vector<Value> emit_global_max(Graph& g, const EmitCall& c) { return emit_global_pool(g, c, "ReduceMax"); }

// A per-channel vector shaped to broadcast over ONNX axis `axis` of a rank-`rank` tensor.
HostTensor channel_vector(std::vector<float> v, int64_t axis, int64_t rank) {
  Shape shape{static_cast<int64_t>(v.size())};
  for (int64_t a = axis + 1; a < rank; ++a) shape.push_back(1);
  return HostTensor{shape, std::move(v)};
}

int64_t single_axis(const EmitCall& c) {
  const auto& a = c.config.at("axis");
  if (a.is_number_integer()) return a.get<int64_t>();
  if (a.is_array() && a.size() == 1) return a[0].get<int64_t>();
  fail<NotImplementedError>(c.layer.where() + " ONNX export", "one normalization axis", a.dump());
}

// BatchNormalization in inference form: x * s + t per channel, s = gamma / sqrt(var + eps),
// t = beta - mean * s (a BatchNormalization after a convolution is folded into it by the walk).
std::vector<Value> emit_batch_norm(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const int64_t axis = Graph::onnx_axis(x, single_axis(c));
  const double eps = c.config.value("epsilon", 1e-3);
  std::vector<float> mean = host_weight(c.layer, "moving_mean").data, var = host_weight(c.layer, "moving_variance").data;
  std::vector<float> gamma = c.config.value("scale", true) ? host_weight(c.layer, "gamma").data : std::vector<float>(var.size(), 1.f);
  std::vector<float> beta = c.config.value("center", true) ? host_weight(c.layer, "beta").data : std::vector<float>(var.size(), 0.f);
  std::vector<float> s(var.size()), t(var.size());
  for (size_t i = 0; i < var.size(); ++i) {
    s[i] = static_cast<float>(gamma[i] / std::sqrt(static_cast<double>(var[i]) + eps));
    t[i] = beta[i] - mean[i] * s[i];
  }
  const std::string key = "/axis" + std::to_string(axis) + "_rank" + std::to_string(x.rank());
  const std::string sn = c.weight(g, "bn_scale" + key, [&] { return channel_vector(s, axis, x.rank()); });
  const std::string tn = c.weight(g, "bn_shift" + key, [&] { return channel_vector(t, axis, x.rank()); });
  const std::string y = g.add("Add", {g.add("Mul", {x.name, sn}, {}, c.hint("scale")), tn}, {}, c.hint("shift"));
  return {c.output(y, x.channels_first)};
}

// LayerNormalization over the last axis: ONNX's LayerNormalization (opset 17).
std::vector<Value> emit_layer_norm(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const int64_t axis = normalize_axis(single_axis(c), x.rank(), c.layer.where());
  if (axis != x.rank() - 1 || c.config.value("rms_scaling", false))
    fail<NotImplementedError>(c.layer.where() + " ONNX export", "axis -1 without rms_scaling", c.config.dump());
  const int64_t n = x.shape.back();
  const std::string gamma = c.config.value("scale", true) ? c.weight(g, "gamma", [&] { return host_weight(c.layer, "gamma"); })
                                                          : g.constant(c.hint("ones"), HostTensor{{n}, std::vector<float>(static_cast<size_t>(n), 1.f)});
  std::vector<std::string> args{g.as_keras(x), gamma};
  if (c.config.value("center", true)) args.push_back(c.weight(g, "beta", [&] { return host_weight(c.layer, "beta"); }));
  return {c.output(g.add("LayerNormalization", args, {attr("axis", int64_t{-1}), attr("epsilon", c.config.value("epsilon", 1e-3))},
                         c.hint("LayerNormalization")))};
}

// UnitNormalization: x / sqrt(max(sum(x^2, axes), 1e-24)).
std::vector<Value> emit_unit_norm(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  std::vector<int64_t> axes;
  const auto& a = c.config.at("axis");
  if (a.is_number_integer()) axes.push_back(Graph::onnx_axis(x, a.get<int64_t>()));
  else
    for (const auto& e : a) axes.push_back(Graph::onnx_axis(x, e.get<int64_t>()));
  const std::string sq = g.add("Mul", {x.name, x.name}, {}, c.hint("square"));
  const std::string sum = g.reduce("ReduceSum", sq, axes, true, c.hint("sum"));
  const std::string norm =
      g.add("Sqrt", {g.add("Max", {sum, g.constant_scalar(c.hint("eps"), 1e-24f)}, {}, c.hint("clamp"))}, {}, c.hint("norm"));
  return {c.output(g.add("Div", {x.name, norm}, {}, c.hint("Div")), x.channels_first)};
}

// GroupNormalization over Keras's last axis: (N, ..., C) -> (N, S, G, C/G), statistics over S
// and C/G, back to the input's shape, then gamma and beta per channel.
std::vector<Value> emit_group_norm(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const int64_t axis = normalize_axis(c.config.value("axis", int64_t{-1}), x.rank(), c.layer.where());
  if (axis != x.rank() - 1)
    fail<NotImplementedError>(c.layer.where() + " ONNX export", "axis -1", "axis " + std::to_string(axis));
  const int64_t channels = x.shape.back();
  int64_t groups = c.config.value("groups", int64_t{32});
  if (groups == -1) groups = channels;
  const std::string in = g.as_keras(x);
  const std::string grouped = g.add("Reshape", {in, g.constant_ints(c.hint("grouped_shape"), {0, -1, groups, channels / groups})},
                                    {}, c.hint("grouped"));
  const std::string mean = g.reduce("ReduceMean", grouped, {1, 3}, true, c.hint("mean"));
  const std::string centered = g.add("Sub", {grouped, mean}, {}, c.hint("centered"));
  const std::string var = g.reduce("ReduceMean", g.add("Mul", {centered, centered}, {}, c.hint("sq")), {1, 3}, true, c.hint("var"));
  const std::string eps = g.constant_scalar(c.hint("eps"), static_cast<float>(c.config.value("epsilon", 1e-3)));
  const std::string normed =
      g.add("Div", {centered, g.add("Sqrt", {g.add("Add", {var, eps}, {}, c.hint("var_eps"))}, {}, c.hint("std"))}, {}, c.hint("normed"));
  std::string y = g.add("Reshape", {normed, g.add("Shape", {in}, {}, c.hint("shape"))}, {}, c.hint("ungrouped"));
  if (c.config.value("scale", true)) y = g.add("Mul", {y, c.weight(g, "gamma", [&] { return host_weight(c.layer, "gamma"); })}, {}, c.hint("gamma"));
  if (c.config.value("center", true)) y = g.add("Add", {y, c.weight(g, "beta", [&] { return host_weight(c.layer, "beta"); })}, {}, c.hint("beta"));
  return {c.output(y)};
}

KERAS_REGISTER_ONNX_EMITTER("MaxPooling1D", emit_max_pool);
KERAS_REGISTER_ONNX_EMITTER("MaxPooling2D", emit_max_pool);
KERAS_REGISTER_ONNX_EMITTER("AveragePooling1D", emit_avg_pool);
KERAS_REGISTER_ONNX_EMITTER("AveragePooling2D", emit_avg_pool);
KERAS_REGISTER_ONNX_EMITTER("GlobalAveragePooling1D", emit_global_avg);
KERAS_REGISTER_ONNX_EMITTER("GlobalAveragePooling2D", emit_global_avg);
KERAS_REGISTER_ONNX_EMITTER("GlobalMaxPooling1D", emit_global_max);
KERAS_REGISTER_ONNX_EMITTER("GlobalMaxPooling2D", emit_global_max);
KERAS_REGISTER_ONNX_EMITTER("BatchNormalization", emit_batch_norm);
KERAS_REGISTER_ONNX_EMITTER("LayerNormalization", emit_layer_norm);
KERAS_REGISTER_ONNX_EMITTER("UnitNormalization", emit_unit_norm);
KERAS_REGISTER_ONNX_EMITTER("GroupNormalization", emit_group_norm);

}  // namespace
}  // namespace keras::onnx
