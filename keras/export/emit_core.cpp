// ONNX emitters of the core layers: Dense, activations, layers that inference removes
// (Dropout, noise and augmentation layers), Rescaling, Normalization, Embedding, the scale layers
// of keras.applications and the arithmetic op layers of Keras configs.
#include <algorithm>
#include <cmath>
#include <map>

#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "layers/op_layer.h"

namespace keras::onnx {
namespace {

// Dense: MatMul (Gemm for 2-D inputs) + bias, then the activation.
std::vector<Value> emit_dense(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::string in = g.as_keras(x);
  const std::string w = c.weight(g, "kernel", [&] { return host_weight(c.layer, "kernel"); });
  const bool bias = c.config.value("use_bias", true);
  std::string y;
  if (x.rank() == 2) {
    std::vector<std::string> args{in, w};
    if (bias) args.push_back(c.weight(g, "bias", [&] { return host_weight(c.layer, "bias"); }));
    y = g.add("Gemm", args, {}, c.hint("Gemm"));
  } else {
    y = g.add("MatMul", {in, w}, {}, c.hint("MatMul"));
    if (bias) y = g.add("Add", {y, c.weight(g, "bias", [&] { return host_weight(c.layer, "bias"); })}, {}, c.hint("BiasAdd"));
  }
  y = emit_activation(g, c.config.value("activation", "linear"), y, x.rank() - 1, c.hint("act"), c.layer.where());
  return {c.output(y)};
}

// Elementwise layers keep the input's layout; softmax needs the ONNX axis of Keras's last one.
std::vector<Value> emit_activation_layer(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::string act = c.config.value("activation", "linear");
  std::string y = emit_activation(g, act, x.name, Graph::onnx_axis(x, -1), c.hint("act"), c.layer.where());
  if (y == x.name) y = g.add("Identity", {x.name}, {}, c.hint("Identity"));
  return {c.output(y, x.channels_first)};
}

// Inference removes the layer: its output is its input (Keras 3 returns the input itself), with
// the input's shape even where the symbolic one differs (RandomCrop's is the crop's).
std::vector<Value> emit_identity(Graph&, const EmitCall& c) { return {c.inputs[0]}; }

// ReLU(max_value, negative_slope, threshold):
//   x >= threshold ? x : negative_slope * (x - threshold), then min(., max_value).
std::vector<Value> emit_relu(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const double slope = c.config.value("negative_slope", 0.0), threshold = c.config.value("threshold", 0.0);
  const auto& mv = c.config["max_value"];
  std::string y;
  if (slope == 0.0 && threshold == 0.0) {
    if (mv.is_null()) y = g.add("Relu", {x.name}, {}, c.hint("Relu"));
    else
      y = g.add("Clip", {x.name, g.constant_scalar(c.hint("min"), 0.f), g.constant_scalar(c.hint("max"), mv.get<float>())},
                {}, c.hint("Clip"));
    return {c.output(y, x.channels_first)};
  }
  const std::string t = g.constant_scalar(c.hint("threshold"), static_cast<float>(threshold));
  const std::string below = g.add("Mul", {g.add("Sub", {x.name, t}, {}, c.hint("shift")),
                                          g.constant_scalar(c.hint("slope"), static_cast<float>(slope))},
                                  {}, c.hint("below"));
  y = g.add("Where", {g.add("GreaterOrEqual", {x.name, t}, {}, c.hint("ge")), x.name, below}, {}, c.hint("Where"));
  if (!mv.is_null()) y = g.add("Min", {y, g.constant_scalar(c.hint("max"), mv.get<float>())}, {}, c.hint("Min"));
  return {c.output(y, x.channels_first)};
}

std::vector<Value> emit_leaky_relu(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const double a = c.config.value("negative_slope", c.config.value("alpha", 0.3));
  return {c.output(g.add("LeakyRelu", {x.name}, {attr("alpha", a)}, c.hint("LeakyRelu")), x.channels_first)};
}

std::vector<Value> emit_elu(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  return {c.output(g.add("Elu", {x.name}, {attr("alpha", c.config.value("alpha", 1.0))}, c.hint("Elu")), x.channels_first)};
}

// Softmax; with a mask, masked entries get -1e9 before and 0 after it. Keras broadcasts the mask
// against the input from the right, as ONNX's Where does, so the same shapes fit (and the same
// ones fail at run time).
std::vector<Value> emit_softmax(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const auto& a = c.config.contains("axis") ? c.config["axis"] : nlohmann::json(-1);
  if (!a.is_number_integer())
    fail<NotImplementedError>(c.layer.where() + " ONNX export", "a single softmax axis", a.dump());
  if (x.mask.empty())
    return {c.output(g.add("Softmax", {x.name}, {attr("axis", Graph::onnx_axis(x, a.get<int64_t>()))}, c.hint("Softmax")),
                     x.channels_first)};
  const std::string logits = g.add("Where", {x.mask, g.as_keras(x), g.constant_scalar(c.hint("masked_logit"), -1e9f)}, {},
                                   c.hint("masked_logits"));
  const std::string y = g.add("Softmax", {logits}, {attr("axis", a.get<int64_t>())}, c.hint("Softmax"));
  return {c.output(g.add("Where", {x.mask, y, g.constant_scalar(c.hint("zero"), 0.f)}, {}, c.hint("masked_softmax")))};
}

// Rescaling: x * scale + offset; a per-channel scale broadcasts over Keras's last axis.
std::vector<Value> emit_rescaling(Graph& g, const EmitCall& c) {
  Value x = c.inputs[0];
  const auto& s = c.config["scale"];
  std::string y;
  if (s.is_array()) {
    x.name = g.as_keras(x);
    x.channels_first = false;
    HostTensor t{{static_cast<int64_t>(s.size())}, {}};
    for (const auto& e : s) t.data.push_back(e.get<float>());
    y = g.add("Mul", {x.name, g.constant(c.hint("scale"), t)}, {}, c.hint("Mul"));
  } else {
    y = g.add("Mul", {x.name, g.constant_scalar(c.hint("scale"), s.get<float>())}, {}, c.hint("Mul"));
  }
  const double offset = c.config.value("offset", 0.0);
  if (offset != 0.0) y = g.add("Add", {y, g.constant_scalar(c.hint("offset"), static_cast<float>(offset))}, {}, c.hint("Add"));
  return {c.output(y, x.channels_first)};
}

// A nested JSON list (or a number) as values and shape.
void flatten_json(const json& j, std::vector<float>& values, Shape& shape, size_t depth = 0) {
  if (!j.is_array()) {
    values.push_back(j.get<float>());
    return;
  }
  if (shape.size() == depth) shape.push_back(static_cast<int64_t>(j.size()));
  for (const auto& e : j) flatten_json(e, values, shape, depth + 1);
}

// Normalization's mean or variance shaped to broadcast onto the input (rank r, 1 on the axes it
// does not keep): the adapted weight, or the config's values aligned to the last kept axes.
HostTensor normalization_stat(const EmitCall& c, const std::string& key) {
  const Value& x = c.inputs[0];
  std::vector<int64_t> kept;
  const auto& axis = c.config.at("axis");
  if (axis.is_number_integer()) kept.push_back(normalize_axis(axis.get<int64_t>(), x.rank(), c.layer.where()));
  else if (axis.is_array())
    for (const auto& a : axis) kept.push_back(normalize_axis(a.get<int64_t>(), x.rank(), c.layer.where()));
  std::sort(kept.begin(), kept.end());
  HostTensor t{Shape(static_cast<size_t>(x.rank()), 1), {}};
  if (c.config.contains(key) && !c.config[key].is_null()) {
    Shape given;
    flatten_json(c.config[key], t.data, given);
    for (size_t i = 1; i <= given.size(); ++i) t.shape[static_cast<size_t>(kept[kept.size() - i])] = given[given.size() - i];
    return t;
  }
  t.data = host_weight(c.layer, key).data;
  for (int64_t d : kept) t.shape[static_cast<size_t>(d)] = x.shape[static_cast<size_t>(d)];
  return t;
}

// Normalization: (x - mean) / max(sqrt(variance), 1e-7), or its inverse.
std::vector<Value> emit_normalization(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  const std::string in = g.as_keras(x);
  const HostTensor mean = normalization_stat(c, "mean");
  HostTensor scale = normalization_stat(c, "variance");
  for (float& v : scale.data) v = std::max(std::sqrt(v), 1e-7f);
  const std::string m = c.weight(g, "mean", [&] { return mean; });
  std::string y;
  if (c.config.value("invert", false)) {
    const std::string s = c.weight(g, "std", [&] { return scale; });
    y = g.add("Add", {g.add("Mul", {in, s}, {}, c.hint("Mul")), m}, {}, c.hint("Add"));
  } else {
    for (float& v : scale.data) v = 1.f / v;
    const std::string s = c.weight(g, "inv_std", [&] { return scale; });
    y = g.add("Mul", {g.add("Sub", {in, m}, {}, c.hint("Sub")), s}, {}, c.hint("Mul"));
  }
  return {c.output(y)};
}

// Embedding: a Gather of the table's rows (ids cast to int64). mask_zero is refused: the mask
// would change what later layers compute (GlobalAveragePooling1D averages the real tokens only),
// and an ONNX graph has no masks.
// Embedding: Gather from the table; mask_zero attaches the mask ids != 0 (masks.h).
std::vector<Value> emit_embedding(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  std::string ids = x.name;
  if (x.dtype != DType::int64) ids = g.add("Cast", {ids}, {attr("to", int64_t{7})}, c.hint("ids"));
  const std::string table = c.weight(g, "embeddings", [&] { return host_weight(c.layer, "embeddings"); });
  Value out = c.output(g.add("Gather", {table, ids}, {attr("axis", int64_t{0})}, c.hint("Gather")));
  if (c.config.value("mask_zero", false))
    out.mask = g.add("Not", {g.add("Equal", {ids, g.constant_ints(c.hint("pad_id"), {0})}, {}, c.hint("is_pad"))}, {}, c.hint("mask"));
  return {out};
}

// LayerScale (ConvNeXt): x * gamma over the last axis.
std::vector<Value> emit_layer_scale(Graph& g, const EmitCall& c) {
  const std::string in = g.as_keras(c.inputs[0]);
  const std::string w = c.weight(g, "variable", [&] { return host_weight(c.layer, "variable"); });
  return {c.output(g.add("Mul", {in, w}, {}, c.hint("Mul")))};
}

// CustomScaleLayer (InceptionResNetV2): x[0] + x[1] * scale.
std::vector<Value> emit_custom_scale(Graph& g, const EmitCall& c) {
  const Value& a = c.inputs[0];
  const Value& b = c.inputs[1];
  const bool cf = a.channels_first && b.channels_first;
  const std::string an = cf ? a.name : g.as_keras(a), bn = cf ? b.name : g.as_keras(b);
  const std::string s = g.constant_scalar(c.hint("scale"), c.config.at("scale").get<float>());
  return {c.output(g.add("Add", {an, g.add("Mul", {bn, s}, {}, c.hint("Mul"))}, {}, c.hint("Add")), cf)};
}

// The op layers of Keras configs (layers/keras_operation.h): binary arithmetic with NumPy
// broadcasting, tensor-constant arithmetic and relu / relu6.
std::vector<Value> emit_op_layer(Graph& g, const EmitCall& c) {
  const auto* op = dynamic_cast<const layers::OpLayerImpl*>(&c.layer);
  if (!op) fail<NotImplementedError>(c.layer.where() + " ONNX export", "an op layer", c.layer.class_name());
  const std::string& name = op->op();
  const std::string where = c.layer.where() + " ONNX export";
  if (c.inputs.size() == 2) {
    static const std::map<std::string, std::string> binary{
        {"add", "Add"}, {"subtract", "Sub"}, {"multiply", "Mul"}, {"divide", "Div"}, {"maximum", "Max"}, {"minimum", "Min"}};
    auto it = binary.find(name);
    if (it == binary.end()) fail<NotImplementedError>(where, "an op with an ONNX mapping", "op '" + name + "'");
    const Value& a = c.inputs[0];
    const Value& b = c.inputs[1];
    const bool cf = a.channels_first && b.channels_first && a.rank() == b.rank();
    return {c.output(g.add(it->second, {cf ? a.name : g.as_keras(a), cf ? b.name : g.as_keras(b)}, {}, c.hint(it->second)),
                     cf)};
  }
  const Value& x = c.inputs[0];
  if (name == "relu") return {c.output(g.add("Relu", {x.name}, {}, c.hint("Relu")), x.channels_first)};
  if (name == "relu6")
    return {c.output(emit_activation(g, "relu6", x.name, 1, c.hint("op"), c.layer.where()), x.channels_first)};
  static const std::map<std::string, std::pair<std::string, bool>> scalar{
      {"add_scalar", {"Add", false}},      {"multiply_scalar", {"Mul", false}}, {"divide_scalar", {"Div", false}},
      {"rsubtract_scalar", {"Sub", true}}, {"rdivide_scalar", {"Div", true}}};
  auto it = scalar.find(name);
  if (it == scalar.end()) fail<NotImplementedError>(where, "an op with an ONNX mapping", "op '" + name + "'");
  const std::string k = g.constant_scalar(c.hint("value"), static_cast<float>(op->attrs().get_float("value")));
  const auto& [onnx_op, reversed] = it->second;
  const std::vector<std::string> args = reversed ? std::vector<std::string>{k, x.name} : std::vector<std::string>{x.name, k};
  return {c.output(g.add(onnx_op, args, {}, c.hint(onnx_op)), x.channels_first)};
}

KERAS_REGISTER_ONNX_EMITTER("Dense", emit_dense);
KERAS_REGISTER_ONNX_EMITTER("Activation", emit_activation_layer);
KERAS_REGISTER_ONNX_EMITTER("ReLU", emit_relu);
KERAS_REGISTER_ONNX_EMITTER("LeakyReLU", emit_leaky_relu);
KERAS_REGISTER_ONNX_EMITTER("ELU", emit_elu);
KERAS_REGISTER_ONNX_EMITTER("Softmax", emit_softmax);
KERAS_REGISTER_ONNX_EMITTER("Rescaling", emit_rescaling);
KERAS_REGISTER_ONNX_EMITTER("Normalization", emit_normalization);
KERAS_REGISTER_ONNX_EMITTER("Embedding", emit_embedding);
KERAS_REGISTER_ONNX_EMITTER("LayerScale", emit_layer_scale);
KERAS_REGISTER_ONNX_EMITTER("CustomScaleLayer", emit_custom_scale);
// Inference mode: identities (Keras 3 returns the inputs of these layers at inference).
const bool identities = [] {
  for (const char* name : {"Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
                           "GaussianDropout", "AlphaDropout", "Identity", "StochasticDepth", "RandomFlip",
                           "RandomRotation", "RandomZoom", "RandomTranslation", "RandomContrast", "RandomBrightness",
                           "RandomCrop"})
    register_emitter(name, emit_identity);
  register_emitter(kOpLayerKey, emit_op_layer);
  return true;
}();

}  // namespace
}  // namespace keras::onnx
