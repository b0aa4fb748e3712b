// Registry of layer classes by Keras class name, for from_config and model loading.
// Custom layers register the same way; nothing read from a file can run code that was not
// registered here.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace keras {

using LayerFactory = std::function<LayerPtr(const json& config)>;

// Registers `class_name`; a second registration of one name replaces the first.
void register_layer(const std::string& class_name, LayerFactory factory);
// Builds a layer from its class name and config; unknown class -> TypeError naming it and
// listing the registered classes.
LayerPtr layer_from_config(const std::string& class_name, const json& config);
std::vector<std::string> registered_layers();

// Static registration: KERAS_REGISTER_LAYER(Dense, [](const json& c) { return ...; });
#define KERAS_REGISTER_LAYER(cls, ...)                                                       \
  static const bool KERAS_CONCAT(keras_layer_registered_, cls) = [] {                        \
    ::keras::register_layer(#cls, __VA_ARGS__);                                              \
    return true;                                                                             \
  }()

}  // namespace keras
