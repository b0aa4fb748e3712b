#include "layers/nested_layer.h"

#include <map>

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::config {

json serialize_nested_layer(const Layer& layer) {
  json c = layer.get_config();
  if (c.contains("dtype") && c["dtype"].is_string())
    c["dtype"] = keras_object("keras", "DTypePolicy", {{"name", c["dtype"]}});
  json obj = keras_object("keras.layers", layer.class_name(), c);
  if (layer.built() && !keras_signature(layer.class_name()).built_at_init) {
    json shapes = json::array();
    for (const auto& s : layer.build_input_shapes()) shapes.push_back(shape_to_json(s));
    obj["build_config"] = {{"input_shape", shapes.size() == 1 ? shapes[0] : shapes}};
  }
  return obj;
}

LayerPtr nested_layer_from_config(const json& j, const std::string& where) {
  auto [cls, c] = unwrap_object(j, where);
  if (!c.is_object()) fail<ValueError>(where, "a layer config object", c.dump());
  LayerPtr layer = layer_from_config(cls, c);
  // Keras's deserialize_keras_object builds the layer from its build_config.
  if (j.is_object() && j.contains("build_config") && j["build_config"].is_object() &&
      j["build_config"].contains("input_shape") && j["build_config"]["input_shape"].is_array()) {
    const json& shape = j["build_config"]["input_shape"];
    std::vector<Shape> shapes;
    if (!shape.empty() && shape[0].is_array()) {
      for (size_t i = 0; i < shape.size(); ++i) shapes.push_back(shape_from_json(shape[i], where + " build_config"));
    } else {
      shapes.push_back(shape_from_json(shape, where + " build_config"));
    }
    layer->ensure_built(shapes);
  }
  return layer;
}

std::vector<std::pair<std::string, LayerPtr>> container_keys(const std::string& container,
                                                             const std::vector<LayerPtr>& layers) {
  std::vector<std::pair<std::string, LayerPtr>> out;
  std::map<std::string, int> used;
  for (const auto& l : layers) {
    std::string key = snake_case(l->class_name());
    auto [it, fresh] = used.emplace(key, 0);
    if (!fresh) key += "_" + std::to_string(++it->second);
    out.emplace_back(container + "/" + key, l);
  }
  return out;
}

}  // namespace keras::config
