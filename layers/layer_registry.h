// Registry of layer classes by Keras class name, for from_config and model loading.
// Custom layers register the same way; nothing read from a file can run code that was not
// registered here.
//
// A custom class registered with a package (Keras's register_keras_serializable(package), whose
// default package is "Custom") is written into Keras 3 configs with registered_name
// "package>Class" and read back under that name or its bare class name.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace keras {

using LayerFactory = std::function<LayerPtr(const json& config)>;

// Registers `class_name`; a second registration of one name replaces the first. A non-empty
// `package` (no '>') marks a custom class registered as "package>class_name".
void register_layer(const std::string& class_name, LayerFactory factory, const std::string& package = "");
// A class Keras defines in a Python module of its own without registering it as a custom object
// (keras.applications' LayerScale and StochasticDepth): Keras 3 writes it as {"module": module,
// "class_name": class_name, "registered_name": class_name} and finds it again by importing that
// module. Read back by its class name whatever the module (tf_keras writes "tf_keras.src...").
void register_layer_in_module(const std::string& class_name, LayerFactory factory, const std::string& module);
// The module of a class registered with register_layer_in_module; "" for every other class.
std::string layer_module(const std::string& class_name);
// Builds a layer from its class name ("Dense") or registered name ("MyPackage>Scale") and its
// config; unknown class -> TypeError naming it and listing the registered classes.
LayerPtr layer_from_config(const std::string& class_name, const json& config);
// Every registered class name (built-in and custom), sorted.
std::vector<std::string> registered_layers();
bool is_layer_registered(const std::string& class_name);
// "package>Class" for a class registered with a package; "" for a built-in or unknown class.
std::string registered_layer_name(const std::string& class_name);

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

// A class of a Keras module: KERAS_REGISTER_MODULE_LAYER("keras.src.applications.convnext", LayerScale, f).
#define KERAS_REGISTER_MODULE_LAYER(module, cls, ...)                                        \
  static const bool KERAS_CONCAT(keras_layer_registered_, cls) = [] {                        \
    ::keras::register_layer_in_module(#cls, __VA_ARGS__, module);                            \
    return true;                                                                             \
  }()

}  // namespace keras
