#include "keras/export/emitter.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "backend/errors.h"
#include "backend/tensor.h"
#include "layers/op_layer.h"

namespace keras::onnx {
namespace {
std::map<std::string, Emitter>& registry() {
  static std::map<std::string, Emitter> r;
  return r;
}

// The layer's own variable called `name` (its path ends in "/<name>").
std::optional<Variable> find_weight(const Layer& layer, const std::string& name) {
  for (const Variable& v : layer.weights()) {
    const std::string& p = v.path();
    if (p.size() > name.size() && p.compare(p.size() - name.size(), name.size(), name) == 0 &&
        p[p.size() - name.size() - 1] == '/')
      return v;
  }
  return std::nullopt;
}
}  // namespace

std::string emitter_key(const Layer& layer) {
  return dynamic_cast<const layers::OpLayerImpl*>(&layer) ? kOpLayerKey : layer.class_name();
}

void register_emitter(const std::string& class_name, Emitter emitter) { registry()[class_name] = std::move(emitter); }

const Emitter* find_emitter(const std::string& class_name) {
  auto it = registry().find(class_name);
  return it == registry().end() ? nullptr : &it->second;
}

bool accepts_keywords(const std::string& class_name) {
  return class_name == "LSTM" || class_name == "GRU" || class_name == "SimpleRNN" || class_name == "RNN" ||
         class_name.rfind("ConvLSTM", 0) == 0 || class_name == "Bidirectional" || class_name == "MultiHeadAttention" ||
         class_name == "GroupedQueryAttention";
}

std::vector<std::string> exportable_classes() {
  std::vector<std::string> out;
  for (const auto& [name, e] : registry()) out.push_back(name);
  return out;
}

std::string EmitCall::weight(Graph& g, const std::string& suffix, const std::function<HostTensor()>& make) const {
  char key[32];
  std::snprintf(key, sizeof key, "%p/", static_cast<const void*>(&layer));
  return g.weight(key + suffix, hint(suffix), make);
}

Value EmitCall::output(std::string name, bool channels_first, size_t index) const {
  return Value{std::move(name), outputs.at(index).shape, outputs.at(index).dtype, channels_first};
}

bool has_weight(const Layer& layer, const std::string& name) { return find_weight(layer, name).has_value(); }

HostTensor host_weight(const Layer& layer, const std::string& name) {
  const std::optional<Variable> v = find_weight(layer, name);
  if (!v) fail<ValueError>(layer.where() + " ONNX export", "a weight '" + name + "'", "none", "Build the layer first.");
  const Tensor t = v->value().contiguous();
  return HostTensor{t.shape(), t.to_vector<float>()};
}

HostTensor permute(const HostTensor& t, const std::vector<int>& perm) {
  const Tensor p = Tensor::from_vector(t.data, t.shape).permuted(perm).contiguous();
  return HostTensor{p.shape(), p.to_vector<float>()};
}

std::string emit_activation(Graph& g, const std::string& name, const std::string& x, int64_t axis,
                            const std::string& hint, const std::string& where) {
  if (name == "linear") return x;
  const std::string h = hint + "_" + name;
  if (name == "relu") return g.add("Relu", {x}, {}, h);
  if (name == "relu6")
    return g.add("Clip", {x, g.constant_scalar(h + "_min", 0.f), g.constant_scalar(h + "_max", 6.f)}, {}, h);
  if (name == "leaky_relu") return g.add("LeakyRelu", {x}, {attr("alpha", 0.2)}, h);
  if (name == "elu") return g.add("Elu", {x}, {attr("alpha", 1.0)}, h);
  if (name == "selu")
    return g.add("Selu", {x}, {attr("alpha", 1.6732632423543772), attr("gamma", 1.0507009873554805)}, h);
  if (name == "sigmoid") return g.add("Sigmoid", {x}, {}, h);
  if (name == "tanh") return g.add("Tanh", {x}, {}, h);
  if (name == "softplus") return g.add("Softplus", {x}, {}, h);
  if (name == "softsign") return g.add("Softsign", {x}, {}, h);
  if (name == "exponential") return g.add("Exp", {x}, {}, h);
  if (name == "softmax") return g.add("Softmax", {x}, {attr("axis", axis)}, h);
  if (name == "log_softmax") return g.add("LogSoftmax", {x}, {attr("axis", axis)}, h);
  if (name == "silu" || name == "swish") return g.add("Mul", {x, g.add("Sigmoid", {x}, {}, h + "_sigmoid")}, {}, h);
  // Keras 3: relu6(x + 3) / 6, which is ONNX's HardSigmoid with alpha 1/6, beta 1/2.
  if (name == "hard_sigmoid") return g.add("HardSigmoid", {x}, {attr("alpha", 1.0 / 6.0), attr("beta", 0.5)}, h);
  if (name == "hard_silu" || name == "hard_swish") return g.add("HardSwish", {x}, {}, h);
  if (name == "gelu") {  // exact: x * (1 + erf(x / sqrt(2))) / 2 (ONNX's Gelu op needs opset 20)
    std::string e = g.add("Erf", {g.add("Mul", {x, g.constant_scalar(h + "_rsqrt2", static_cast<float>(M_SQRT1_2))}, {}, h + "_scaled")},
                          {}, h + "_erf");
    std::string one = g.add("Add", {e, g.constant_scalar(h + "_one", 1.f)}, {}, h + "_1p");
    return g.add("Mul", {g.add("Mul", {x, one}, {}, h + "_x1p"), g.constant_scalar(h + "_half", 0.5f)}, {}, h);
  }
  fail<NotImplementedError>(where + " ONNX export", "an activation with an ONNX mapping", "'" + name + "'");
}

std::vector<int64_t> config_ints(const nlohmann::json& config, const std::string& key, size_t n) {
  const auto& v = config.at(key);
  std::vector<int64_t> out;
  if (v.is_number_integer()) out.assign(n, v.get<int64_t>());
  else
    for (const auto& e : v) out.push_back(e.get<int64_t>());
  if (out.size() != n)
    fail<ValueError>("ONNX export config '" + key + "'", std::to_string(n) + " integers", v.dump());
  return out;
}

}  // namespace keras::onnx
