// Keras 3's node kwargs (keras/src/layers/layer.py, Layer.__call__ and CallSpec): the kwargs dict
// the caller passed is the one the node records, and steps 5 and 6 of __call__ fill `training`
// and `mask` into it, except when step 1 replaced it by a converted copy.
#include "keras/saving/detail/node_kwargs.h"

#include <algorithm>

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

json recorded_kwargs(const Layer& layer, const LayerNode& node, const MaskWriter& mask) {
  const KerasSignature& signature = keras_signature(layer.class_name());
  json kwargs = json::object();
  if (node.args.training) kwargs["training"] = *node.args.training;
  const bool one_tensor = node.inputs.size() == 1;
  const bool passed_kwargs = !kwargs.empty() || !node.args.keywords.empty() || !node.args.options.empty();
  const bool converted = signature.converts_inputs &&
                         (passed_kwargs || !one_tensor || node.inputs[0].dtype != input_dtype(layer));
  if (converted) return kwargs;
  if (!node.args.training && signature.training_default) kwargs["training"] = *signature.training_default;
  if (signature.takes_mask) {
    auto mask_of = [&](const KerasTensor& t) { return mask ? mask(t) : json(nullptr); };
    if (one_tensor) {
      kwargs["mask"] = mask_of(node.inputs[0]);
    } else {
      kwargs["mask"] = json::array();
      for (const auto& t : node.inputs) kwargs["mask"].push_back(mask_of(t));
    }
  }
  return kwargs;
}

json keras3_node(const Layer& layer, const LayerNode& node, const std::function<json(const KerasTensor&)>& keras_tensor,
                 const MaskWriter& mask) {
  const auto& keywords = node.args.keywords;
  const size_t positional = node.inputs.size() - keywords.size();
  json args = json::array();
  if (positional == 1 || (positional > 1 && keras_signature(layer.class_name()).tensor_parameters.size() >= positional)) {
    for (size_t i = 0; i < positional; ++i) args.push_back(keras_tensor(node.inputs[i]));
  } else if (positional > 1) {
    json list = json::array();
    for (size_t i = 0; i < positional; ++i) list.push_back(keras_tensor(node.inputs[i]));
    args.push_back(std::move(list));
  }
  json kwargs = recorded_kwargs(layer, node, mask);
  for (size_t j = 0; j < keywords.size(); ++j) {
    json t = keras_tensor(node.inputs[positional + j]);
    if (std::count(keywords.begin(), keywords.end(), keywords[j]) > 1) kwargs[keywords[j]].push_back(std::move(t));
    else kwargs[keywords[j]] = std::move(t);
  }
  for (const auto& [key, value] : node.args.options.items()) kwargs[key] = value;
  return {{"args", std::move(args)}, {"kwargs", std::move(kwargs)}};
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
