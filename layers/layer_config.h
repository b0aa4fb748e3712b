// Helpers shared by every layer's get_config / from_config: the Keras base keys, Keras 2/3 object
// forms, and small JSON readers. Layers keep their options structs flat (Keras keys first, then
// name/trainable/dtype) so designated initialisers read like Keras keyword arguments.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/shape.h"
#include "layers/layer.h"

namespace keras::config {

using json = nlohmann::json;

// A Keras 3 serialized built-in object:
// {"module": module, "class_name": class_name, "config": config, "registered_name": null}.
json keras_object(const std::string& module, const std::string& class_name, const json& config);

// Class name and inner config of a serialized object in any accepted form: a Keras 2
// {"class_name","config"}, a Keras 3 object (module/registered_name ignored), or a bare string
// (config {}). Throws ValueError naming `where` for anything else.
std::pair<std::string, json> unwrap_object(const json& j, const std::string& where);

// Layer dtype policy name from a config value: "float32", a DTypePolicy/Policy object, or null
// ("": the global policy).
std::string dtype_from_config(const json& j);

// Reads name/trainable/dtype from a layer config into any options struct with those members.
template <class Options>
void read_base_keys(const json& c, Options& o) {
  if (c.contains("name") && c["name"].is_string()) o.name = c["name"].get<std::string>();
  if (c.contains("trainable") && c["trainable"].is_boolean()) o.trainable = c["trainable"].get<bool>();
  if (c.contains("dtype")) o.dtype = dtype_from_config(c["dtype"]);
}

// The base options of an options struct (for the Layer constructor).
template <class Options>
LayerOptions base_options(const Options& o) {
  return LayerOptions{o.name, o.trainable, o.dtype};
}

// Activation name from a config value: a string, null (-> "linear"), or a Keras 3 object whose
// config is the name. Unknown names are left for ops::activation to reject.
std::string activation_from_config(const json& j);

// A list of extents (null entries -> -1); a bare integer is a list of one.
Shape shape_from_json(const json& j, const std::string& where);
json shape_to_json(const Shape& s, bool null_for_unknown = true);

// An optional integer (null or absent -> nullopt).
std::optional<int64_t> optional_int(const json& c, const std::string& key);

}  // namespace keras::config
