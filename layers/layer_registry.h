// Registry of layer classes by Keras class name, for from_config and model loading.
// Custom layers register the same way; nothing read from a file can run code that was not
// registered here.
//
// A custom class registered with a package (Keras's register_keras_serializable(package), whose
// default package is "Custom") is written into Keras 3 configs with registered_name
// "package>Class" and read back under that name or its bare class name.
//
// A class Keras itself defines outside keras.layers (an application's own layer, such as
// InceptionResNetV2's CustomScaleLayer) is registered with its Python `module`: Keras 3 writes it
// as {"module": module, "class_name": Class, "registered_name": Class} and finds it by importing
// that module. Its `package`, if any, is the one tf_keras registered it under ("Custom"), so
// "Custom>Class" (tf_keras configs, Keras 2 schema) reads back as well.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace keras {

using LayerFactory = std::function<LayerPtr(const json& config)>;

// Registers `class_name`; a second registration of one name replaces the first. A non-empty
// `package` (no '>') marks a custom class registered as "package>class_name". A non-empty `module`
// is the Python module Keras 3 writes for the class (see above).
void register_layer(const std::string& class_name, LayerFactory factory, const std::string& package = "",
                    const std::string& module = "");
// Builds a layer from its class name ("Dense") or registered name ("MyPackage>Scale") and its
// config; unknown class -> TypeError naming it and listing the registered classes.
LayerPtr layer_from_config(const std::string& class_name, const json& config);
// Every registered class name (built-in and custom), sorted.
std::vector<std::string> registered_layers();
bool is_layer_registered(const std::string& class_name);
// "package>Class" for a class registered with a package; "" for a built-in or unknown class.
std::string registered_layer_name(const std::string& class_name);
// The Python module registered for a Keras-defined class outside keras.layers; "" otherwise.
std::string registered_layer_module(const std::string& class_name);

// Static registration: KERAS_REGISTER_LAYER(Dense, [](const json& c) { return ...; });
#define KERAS_REGISTER_LAYER(cls, ...)                                                       \
  static const bool KERAS_CONCAT(keras_layer_registered_, cls) = [] {                        \
    ::keras::register_layer(#cls, __VA_ARGS__);                                              \
    return true;                                                                             \
  }()

// A custom class under a package: KERAS_REGISTER_CUSTOM_LAYER("MyPackage", Scale, factory).
#define KERAS_REGISTER_CUSTOM_LAYER(package, cls, ...)                                       \
  static const bool KERAS_CONCAT(keras_layer_registered_, cls) = [] {                        \
    ::keras::register_layer(#cls, __VA_ARGS__, package);                                     \
    return true;                                                                             \
  }()

// A Keras class outside keras.layers:
// KERAS_REGISTER_KERAS_LAYER("keras.src.applications.inception_resnet_v2", "Custom", CustomScaleLayer, factory).
#define KERAS_REGISTER_KERAS_LAYER(module, package, cls, ...)                                \
  static const bool KERAS_CONCAT(keras_layer_registered_, cls) = [] {                        \
    ::keras::register_layer(#cls, __VA_ARGS__, package, module);                             \
    return true;                                                                             \
  }()

}  // namespace keras
