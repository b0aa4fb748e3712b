// ONNX emitters of the shape layers (Flatten, Reshape, Permute, RepeatVector, padding,
// cropping, upsampling, Resizing, CenterCrop) and the merge layers (Add, Subtract, Multiply,
// Average, Maximum, Minimum, Concatenate). Layers that only move data along named axes work in
// whichever layout their input has; the rest take Keras's layout.
#include <cmath>
#include <limits>

#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "keras/export/masks.h"

namespace keras::onnx {
namespace {

std::string where_of(const EmitCall& c) { return c.layer.where() + " ONNX export"; }

// Keras's axes of the spatial extents of a rank-`rank` input.
std::vector<int64_t> spatial_axes(const EmitCall& c, int64_t rank) {
  const bool cf = c.config.value("data_format", "channels_last") == "channels_first";
  std::vector<int64_t> axes;
  for (int64_t a = cf ? 2 : 1; a < (cf ? rank : rank - 1); ++a) axes.push_back(a);
  return axes;
}

// Flatten: Keras's channels_last order (channels_first data is moved to it first, as Keras 3).
std::vector<Value> emit_flatten(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  std::string in = g.as_keras(x);
  if (c.config.value("data_format", "channels_last") == "channels_first" && x.rank() > 2) {
    std::vector<int64_t> perm{0};
    for (int64_t a = 2; a < x.rank(); ++a) perm.push_back(a);
    perm.push_back(1);
    in = g.add("Transpose", {in}, {attr("perm", perm)}, c.hint("to_channels_last"));
  }
  return {c.output(g.add("Flatten", {in}, {attr("axis", int64_t{1})}, c.hint("Flatten")))};
}

// Reshape: 0 keeps the batch extent, so the batch stays dynamic.
std::vector<Value> emit_reshape(Graph& g, const EmitCall& c) {
  std::vector<int64_t> shape{0};
  for (const auto& e : c.config.at("target_shape")) shape.push_back(e.is_null() ? -1 : e.get<int64_t>());
  const std::string s = g.constant_ints(c.hint("shape"), shape);
  return {c.output(g.add("Reshape", {g.as_keras(c.inputs[0]), s}, {}, c.hint("Reshape")))};
}

std::vector<Value> emit_permute(Graph& g, const EmitCall& c) {
  std::vector<int64_t> perm{0};
  for (const auto& e : c.config.at("dims")) perm.push_back(e.get<int64_t>());
  return {c.output(g.add("Transpose", {g.as_keras(c.inputs[0])}, {attr("perm", perm)}, c.hint("Transpose")))};
}

// RepeatVector: (N, F) -> (N, 1, F) broadcast to (N, n, F).
std::vector<Value> emit_repeat_vector(Graph& g, const EmitCall& c) {
  const std::string u = g.add("Unsqueeze", {c.inputs[0].name, g.constant_ints(c.hint("axes"), {1})}, {}, c.hint("Unsqueeze"));
  const std::string shape = g.constant_ints(c.hint("shape"), {1, c.config.at("n").get<int64_t>(), 1});
  return {c.output(g.add("Expand", {u, shape}, {}, c.hint("Expand")))};
}

// (before, after) per spatial axis from a padding/cropping config: an int, [a, b] (1-D) or
// [[top, bottom], [left, right]] / [h, w] (2-D).
std::vector<std::pair<int64_t, int64_t>> amounts(const nlohmann::json& j, size_t n) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (j.is_number_integer()) return std::vector<std::pair<int64_t, int64_t>>(n, {j.get<int64_t>(), j.get<int64_t>()});
  if (n == 1) return {{j.at(0).get<int64_t>(), j.at(1).get<int64_t>()}};
  for (const auto& e : j) {
    if (e.is_number_integer()) out.emplace_back(e.get<int64_t>(), e.get<int64_t>());
    else out.emplace_back(e.at(0).get<int64_t>(), e.at(1).get<int64_t>());
  }
  return out;
}

std::vector<Value> emit_zero_padding(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::vector<int64_t> axes = spatial_axes(c, x.rank());
  const auto pad = amounts(c.config.at("padding"), axes.size());
  std::vector<int64_t> pads(2 * static_cast<size_t>(x.rank()), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(Graph::onnx_axis(x, axes[i]));
    pads[a] = pad[i].first;
    pads[static_cast<size_t>(x.rank()) + a] = pad[i].second;
  }
  return {c.output(g.add("Pad", {x.name, g.constant_ints(c.hint("pads"), pads)}, {attr("mode", "constant")}, c.hint("Pad")),
                   x.channels_first)};
}

std::vector<Value> emit_cropping(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::vector<int64_t> axes = spatial_axes(c, x.rank());
  const auto crop = amounts(c.config.at("cropping"), axes.size());
  std::vector<int64_t> starts, ends, onnx_axes;
  for (size_t i = 0; i < axes.size(); ++i) {
    onnx_axes.push_back(Graph::onnx_axis(x, axes[i]));
    starts.push_back(crop[i].first);
    ends.push_back(crop[i].second > 0 ? -crop[i].second : std::numeric_limits<int64_t>::max());
  }
  const std::string y = g.add("Slice", {x.name, g.constant_ints(c.hint("starts"), starts), g.constant_ints(c.hint("ends"), ends),
                                        g.constant_ints(c.hint("axes"), onnx_axes)},
                              {}, c.hint("Slice"));
  return {c.output(y, x.channels_first)};
}

// Resize by integer factors: nearest (asymmetric, floor: index i // s, Keras's repeat) or
// bilinear (half-pixel, as tf.image.resize; run channels-first).
std::string resize_scales(Graph& g, const EmitCall& c, const std::string& x, const std::vector<float>& scales,
                          const std::string& mode) {
  HostTensor s{{static_cast<int64_t>(scales.size())}, scales};
  std::vector<Attr> attrs{attr("mode", mode == "nearest" ? "nearest" : "linear")};
  if (mode == "nearest") {
    attrs.push_back(attr("coordinate_transformation_mode", "asymmetric"));
    attrs.push_back(attr("nearest_mode", "floor"));
  } else {
    attrs.push_back(attr("coordinate_transformation_mode", "half_pixel"));
  }
  return g.add("Resize", {x, "", g.constant(c.hint("scales"), s)}, std::move(attrs), c.hint("Resize"));
}

std::vector<Value> emit_upsampling(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::string mode = c.config.value("interpolation", "nearest");
  if (mode != "nearest" && mode != "bilinear")
    fail<NotImplementedError>(where_of(c), "interpolation 'nearest' or 'bilinear'", "'" + mode + "'");
  const std::vector<int64_t> axes = spatial_axes(c, x.rank());
  const std::vector<int64_t> size = config_ints(c.config, "size", axes.size());
  // Bilinear resizing runs channels-first (ONNX Runtime's linear mode wants N, C outermost).
  Value v = x;
  if (mode == "bilinear" && c.config.value("data_format", "channels_last") == "channels_last") {
    v.name = g.as_channels_first(x);
    v.channels_first = true;
  }
  std::vector<float> scales(static_cast<size_t>(x.rank()), 1.f);
  for (size_t i = 0; i < axes.size(); ++i) scales[static_cast<size_t>(Graph::onnx_axis(v, axes[i]))] = static_cast<float>(size[i]);
  return {c.output(resize_scales(g, c, v.name, scales, mode), v.channels_first)};
}

// Resizing to (height, width): bilinear as tf.image.resize (half-pixel), nearest as TF's
// half-pixel nearest neighbour, floor((i + 0.5) * in / out), written as Gathers of those rows and
// columns (exact, whatever ONNX Runtime's nearest rounding).
std::vector<Value> emit_resizing(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::string mode = c.config.value("interpolation", "bilinear");
  if (c.config.value("crop_to_aspect_ratio", false) || c.config.value("pad_to_aspect_ratio", false) ||
      (mode != "bilinear" && mode != "nearest") || c.config.value("data_format", "channels_last") != "channels_last")
    fail<NotImplementedError>(where_of(c), "bilinear or nearest channels_last resizing without aspect-ratio options",
                              c.config.dump());
  const int64_t h = c.config.at("height").get<int64_t>(), w = c.config.at("width").get<int64_t>();
  if (mode == "bilinear") {
    const std::string in = g.as_channels_first(x);
    // sizes for N and C come from the input: Concat(Shape(x)[:2], [h, w]).
    const std::string nc = g.add("Slice", {g.add("Shape", {in}, {}, c.hint("shape")), g.constant_ints(c.hint("s0"), {0}),
                                           g.constant_ints(c.hint("s2"), {2})},
                                 {}, c.hint("nc"));
    const std::string full = g.add("Concat", {nc, g.constant_ints(c.hint("hw"), {h, w})}, {attr("axis", int64_t{0})}, c.hint("sizes"));
    const std::string y = g.add("Resize", {in, "", "", full},
                                {attr("mode", "linear"), attr("coordinate_transformation_mode", "half_pixel")}, c.hint("Resize"));
    return {c.output(y, true)};
  }
  std::string y = x.name;
  const int64_t out_sizes[2] = {h, w};
  for (int i = 0; i < 2; ++i) {
    const int64_t keras_axis = 1 + i, in_extent = x.shape[static_cast<size_t>(keras_axis)];
    if (in_extent < 0) fail<NotImplementedError>(where_of(c), "known spatial extents", shape_str(x.shape));
    std::vector<int64_t> idx;
    const float scale = static_cast<float>(in_extent) / static_cast<float>(out_sizes[i]);
    for (int64_t o = 0; o < out_sizes[i]; ++o)
      idx.push_back(std::min<int64_t>(static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * scale)), in_extent - 1));
    y = g.add("Gather", {y, g.constant_ints(c.hint("rows"), idx)}, {attr("axis", Graph::onnx_axis(x, keras_axis))}, c.hint("Gather"));
  }
  return {c.output(y, x.channels_first)};
}

// CenterCrop of an input at least as large as the target (a smaller one Keras resizes).
std::vector<Value> emit_center_crop(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::vector<int64_t> axes = spatial_axes(c, x.rank());
  const int64_t target[2] = {c.config.at("height").get<int64_t>(), c.config.at("width").get<int64_t>()};
  std::vector<int64_t> starts, ends, onnx_axes;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t extent = x.shape[static_cast<size_t>(axes[i])];
    if (extent < target[i])
      fail<NotImplementedError>(where_of(c), "an input at least as large as the crop", shape_str(x.shape));
    const int64_t start = (extent - target[i]) / 2;
    starts.push_back(start);
    ends.push_back(start + target[i]);
    onnx_axes.push_back(Graph::onnx_axis(x, axes[i]));
  }
  const std::string y = g.add("Slice", {x.name, g.constant_ints(c.hint("starts"), starts), g.constant_ints(c.hint("ends"), ends),
                                        g.constant_ints(c.hint("axes"), onnx_axes)},
                              {}, c.hint("Slice"));
  return {c.output(y, x.channels_first)};
}

// The inputs of a merge in one layout: channels-first when all are (same rank), else Keras's.
std::vector<std::string> merge_inputs(Graph& g, const EmitCall& c, bool& channels_first) {
  channels_first = true;
  for (const Value& v : c.inputs) channels_first = channels_first && v.channels_first && v.rank() == c.inputs[0].rank();
  std::vector<std::string> names;
  for (const Value& v : c.inputs) names.push_back(channels_first ? v.name : g.as_keras(v));
  return names;
}

std::vector<Value> emit_merge(Graph& g, const EmitCall& c, const std::string& op_type) {
  // Maximum and Minimum read masks (Add, Subtract, Average ignore them, as Keras).
  if ((op_type == "Max" || op_type == "Min") && has_masks(c)) return {c.output(masked_merge(g, c, op_type))};
  bool cf = false;
  const std::vector<std::string> in = merge_inputs(g, c, cf);
  // Two inputs as Add (what ONNX Runtime fuses into a preceding convolution), more as Sum.
  const std::string op = op_type == "Sum" && in.size() == 2 ? "Add" : op_type;
  return {c.output(g.add(op, in, {}, c.hint(op)), cf)};
}

std::vector<Value> emit_multiply(Graph& g, const EmitCall& c) {
  if (has_masks(c)) return {c.output(masked_merge(g, c, "Mul"))};
  bool cf = false;
  const std::vector<std::string> in = merge_inputs(g, c, cf);
  std::string y = in[0];
  for (size_t i = 1; i < in.size(); ++i) y = g.add("Mul", {y, in[i]}, {}, c.hint("Mul"));
  return {c.output(y, cf)};
}

std::vector<Value> emit_concatenate(Graph& g, const EmitCall& c) {
  bool cf = false;
  const std::vector<std::string> in = merge_inputs(g, c, cf);
  Value first = c.inputs[0];
  first.channels_first = cf;
  const int64_t axis = Graph::onnx_axis(first, c.config.value("axis", int64_t{-1}));
  return {c.output(g.add("Concat", in, {attr("axis", axis)}, c.hint("Concat")), cf)};
}

// Dot (Keras's batch_dot) of two rank-2 or rank-3 inputs: the contracted axes moved so that a
// MatMul (or, for rank 2, a product summed over the features) computes it; normalize first
// L2-normalizes each input along its axis.
std::vector<Value> emit_dot(Graph& g, const EmitCall& c) {
  const Value& a = c.inputs[0];
  const Value& b = c.inputs[1];
  const auto& axes = c.config.at("axes");
  int64_t ax = axes.is_array() ? axes[0].get<int64_t>() : axes.get<int64_t>();
  int64_t bx = axes.is_array() ? axes[1].get<int64_t>() : axes.get<int64_t>();
  if (a.rank() != b.rank() || a.rank() < 2 || a.rank() > 3)
    fail<NotImplementedError>(where_of(c), "two inputs of rank 2 or 3", shape_str(a.shape) + " and " + shape_str(b.shape));
  ax = normalize_axis(ax, a.rank(), c.layer.where());
  bx = normalize_axis(bx, b.rank(), c.layer.where());
  std::string an = g.as_keras(a), bn = g.as_keras(b);
  if (c.config.value("normalize", false)) {
    auto l2 = [&](const std::string& x, int64_t axis, const std::string& tag) {
      const std::string sq = g.reduce("ReduceSum", g.add("Mul", {x, x}, {}, c.hint(tag + "_sq")), {axis}, true, c.hint(tag + "_sum"));
      const std::string norm = g.add("Sqrt", {g.add("Max", {sq, g.constant_scalar(c.hint(tag + "_eps"), 1e-14f)}, {}, c.hint(tag + "_clamp"))},
                                     {}, c.hint(tag + "_norm"));
      return g.add("Div", {x, norm}, {}, c.hint(tag + "_normalized"));
    };
    an = l2(an, ax, "a");
    bn = l2(bn, bx, "b");
  }
  if (a.rank() == 2)
    return {c.output(g.reduce("ReduceSum", g.add("Mul", {an, bn}, {}, c.hint("product")), {1}, true, c.hint("Dot")))};
  const std::vector<int64_t> swap{0, 2, 1};
  if (ax == 1) an = g.add("Transpose", {an}, {attr("perm", swap)}, c.hint("a_t"));  // contract a's last axis
  if (bx == 2) bn = g.add("Transpose", {bn}, {attr("perm", swap)}, c.hint("b_t"));  // and b's middle one
  return {c.output(g.add("MatMul", {an, bn}, {}, c.hint("Dot")))};
}

KERAS_REGISTER_ONNX_EMITTER("Dot", emit_dot);
KERAS_REGISTER_ONNX_EMITTER("Flatten", emit_flatten);
KERAS_REGISTER_ONNX_EMITTER("Reshape", emit_reshape);
KERAS_REGISTER_ONNX_EMITTER("Permute", emit_permute);
KERAS_REGISTER_ONNX_EMITTER("RepeatVector", emit_repeat_vector);
KERAS_REGISTER_ONNX_EMITTER("ZeroPadding1D", emit_zero_padding);
KERAS_REGISTER_ONNX_EMITTER("ZeroPadding2D", emit_zero_padding);
KERAS_REGISTER_ONNX_EMITTER("Cropping1D", emit_cropping);
KERAS_REGISTER_ONNX_EMITTER("Cropping2D", emit_cropping);
KERAS_REGISTER_ONNX_EMITTER("UpSampling1D", emit_upsampling);
KERAS_REGISTER_ONNX_EMITTER("UpSampling2D", emit_upsampling);
KERAS_REGISTER_ONNX_EMITTER("Resizing", emit_resizing);
KERAS_REGISTER_ONNX_EMITTER("CenterCrop", emit_center_crop);
KERAS_REGISTER_ONNX_EMITTER("Add", [](Graph& g, const EmitCall& c) { return emit_merge(g, c, "Sum"); });
KERAS_REGISTER_ONNX_EMITTER("Subtract", [](Graph& g, const EmitCall& c) { return emit_merge(g, c, "Sub"); });
KERAS_REGISTER_ONNX_EMITTER("Average", [](Graph& g, const EmitCall& c) { return emit_merge(g, c, "Mean"); });
KERAS_REGISTER_ONNX_EMITTER("Maximum", [](Graph& g, const EmitCall& c) { return emit_merge(g, c, "Max"); });
KERAS_REGISTER_ONNX_EMITTER("Minimum", [](Graph& g, const EmitCall& c) { return emit_merge(g, c, "Min"); });
KERAS_REGISTER_ONNX_EMITTER("Multiply", emit_multiply);
KERAS_REGISTER_ONNX_EMITTER("Concatenate", emit_concatenate);

}  // namespace
}  // namespace keras::onnx
