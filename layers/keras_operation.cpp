#include "layers/keras_operation.h"

#include <algorithm>

namespace keras::layers {
namespace {

struct OperationDef {
  const char* module;
  const char* class_name;
  std::vector<const char*> tf_functions;  // the first is the one tf_keras writes
  int arity;
  const char* op;              // tensor (op) tensor, or the unary op
  const char* scalar_op = "";  // tensor (op) constant, the constant as attr "value"
  const char* rscalar_op = ""; // constant (op) tensor
  bool negate_scalar = false;  // x - c runs as x + (-c)
};

const std::vector<OperationDef>& table() {
  static const std::vector<OperationDef> defs = {
      {"keras.src.ops.numpy", "Add", {"__operators__.add", "math.add"}, 2, "add", "add_scalar", "add_scalar"},
      {"keras.src.ops.numpy", "Subtract", {"math.subtract"}, 2, "subtract", "add_scalar", "rsubtract_scalar", true},
      {"keras.src.ops.numpy", "Multiply", {"math.multiply"}, 2, "multiply", "multiply_scalar", "multiply_scalar"},
      {"keras.src.ops.numpy", "TrueDivide", {"math.truediv"}, 2, "divide", "divide_scalar", "rdivide_scalar"},
      {"keras.src.ops.nn", "Relu", {"nn.relu"}, 1, "relu"},
      {"keras.src.ops.nn", "Relu6", {"nn.relu6"}, 1, "relu6"},
  };
  return defs;
}

std::string supported_classes() {
  std::string s;
  for (const auto& d : table()) s += (s.empty() ? "" : ", ") + std::string(d.module) + "." + d.class_name;
  return s;
}

std::string supported_functions() {
  std::string s;
  for (const auto& d : table())
    for (const char* f : d.tf_functions) s += (s.empty() ? "" : ", ") + std::string(f);
  return s;
}

const OperationDef& find_class(const std::string& module, const std::string& cls, const std::string& where) {
  for (const auto& d : table())
    if (module == d.module && cls == d.class_name) return d;
  fail<TypeError>(where, "a supported Keras operation (" + supported_classes() + ")", "'" + module + "." + cls + "'",
                  "This framework cannot replay that operation.");
}

std::string args_str(const std::vector<std::optional<double>>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : ", ") + (a ? json(*a).dump() : std::string("tensor"));
  return "(" + s + ")";
}

}  // namespace

bool is_keras_operation_module(const std::string& module) { return module.rfind("keras.src.ops.", 0) == 0; }

std::string keras_operation_module(const std::string& cls) {
  for (const auto& d : table())
    if (cls == d.class_name) return d.module;
  return "";
}

std::shared_ptr<OpLayerImpl> keras_operation_layer(const KerasOperationCall& call, const std::string& name,
                                                   const std::string& where, const std::string& class_name) {
  const OperationDef& d = find_class(call.module, call.class_name, where);
  const std::string w = where + " (" + call.class_name + ")";
  const auto tensors = std::count(call.args.begin(), call.args.end(), std::nullopt);
  if (static_cast<int>(call.args.size()) != d.arity || tensors == 0)
    fail<ValueError>(w, std::to_string(d.arity) + " argument(s), at least one a tensor", args_str(call.args));
  std::string op = d.op;
  Attrs attrs;
  if (d.arity == 2 && tensors == 1) {
    const bool constant_first = call.args[0].has_value();
    const double c = constant_first ? *call.args[0] : *call.args[1];
    op = constant_first ? d.rscalar_op : d.scalar_op;
    attrs.set("value", constant_first || !d.negate_scalar ? c : -c);
  }
  auto layer = std::make_shared<OpLayerImpl>(op, attrs, std::vector<DType>{}, name);
  layer->set_keras_call(call, class_name);
  return layer;
}

KerasOperationCall keras_call_of_tf_function(const std::string& function, std::vector<std::optional<double>> args,
                                             const std::string& where) {
  for (const auto& d : table())
    for (const char* f : d.tf_functions)
      if (function == f) return {d.module, d.class_name, std::move(args)};
  fail<TypeError>(where, "a supported TFOpLambda function (" + supported_functions() + ")", "'" + function + "'",
                  "This framework cannot replay that TensorFlow function.");
}

std::pair<std::string, int> tf_function_of(const std::string& module, const std::string& cls, const std::string& where) {
  const OperationDef& d = find_class(module, cls, where);
  return {d.tf_functions.front(), d.arity};
}

}  // namespace keras::layers
