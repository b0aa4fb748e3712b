// Keras 3's node kwargs (keras/src/layers/layer.py, Layer.__call__ and CallSpec): the kwargs dict
// the caller passed is the one the node records, and steps 5 and 6 of __call__ fill `training`
// and `mask` into it, except when step 1 replaced it by a converted copy.
#include "keras/saving/detail/node_kwargs.h"

#include "keras/models/sequential.h"
#include "layers/keras_signature.h"

namespace keras::detail {
namespace {

// Keras's layer.input_dtype: the compute dtype (float32 for every layer here); a Sequential's is
// that of its InputLayer.
DType input_dtype(const Layer& layer) {
  if (auto seq = dynamic_cast<const Sequential*>(&layer); seq && seq->built() && !seq->inputs().empty())
    return seq->inputs()[0].dtype;
  return DType::float32;
}

}  // namespace

json recorded_kwargs(const Layer& layer, const LayerNode& node) {
  const KerasSignature& signature = keras_signature(layer.class_name());
  json kwargs = json::object();
  if (node.args.training) kwargs["training"] = *node.args.training;
  const bool one_tensor = node.inputs.size() == 1;
  const bool converted = signature.converts_inputs &&
                         (!kwargs.empty() || !one_tensor || node.inputs[0].dtype != input_dtype(layer));
  if (converted) return kwargs;
  if (!node.args.training && signature.training_default) kwargs["training"] = *signature.training_default;
  if (signature.takes_mask) kwargs["mask"] = one_tensor ? json(nullptr) : json(json::array_t(node.inputs.size()));
  return kwargs;
}

bool holds_no_tensor(const json& value) {
  if (value.is_null()) return true;
  if (!value.is_array() && !value.is_object()) return false;
  for (const auto& v : value)
    if (!holds_no_tensor(v)) return false;
  return true;
}

bool is_call_default(const std::string& class_name, const std::string& key, const json& value) {
  if (key == "mask") return holds_no_tensor(value);
  if (key != "training" || !value.is_boolean()) return false;
  const auto& training_default = keras_signature(class_name).training_default;
  return training_default && *training_default == value.get<bool>();
}

}  // namespace keras::detail
