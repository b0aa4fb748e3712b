#include "layers/layer_registry.h"

#include <map>

namespace keras {
namespace {
struct Entry {
  LayerFactory factory;
  std::string package;  // empty for built-ins
  std::string module;   // Keras 3 module of a Keras class outside keras.layers; empty otherwise
};
std::map<std::string, Entry>& table() {
  static std::map<std::string, Entry> t;
  return t;
}
}  // namespace

void register_layer(const std::string& class_name, LayerFactory factory, const std::string& package,
                    const std::string& module) {
  if (class_name.empty() || class_name.find('>') != std::string::npos || package.find('>') != std::string::npos)
    fail<ValueError>("register_layer", "a class name and package without '>'",
                     "'" + class_name + "' in package '" + package + "'");
  if (!factory) fail<ValueError>("register_layer('" + class_name + "')", "a factory", "an empty function");
  table()[class_name] = Entry{std::move(factory), package, module};
}

LayerPtr layer_from_config(const std::string& name, const json& config) {
  // "package>Class": the class must be registered under that very package.
  std::string class_name = name, package;
  if (auto gt = name.find('>'); gt != std::string::npos) {
    package = name.substr(0, gt);
    class_name = name.substr(gt + 1);
  }
  auto it = table().find(class_name);
  bool found = it != table().end() && (package.empty() || it->second.package == package);
  if (!found) {
    std::string known;
    for (const auto& n : registered_layers()) {
      std::string full = registered_layer_name(n);
      known += (known.empty() ? "" : ", ") + (full.empty() ? n : full);
    }
    fail<TypeError>("layer_from_config", "a registered layer class", "'" + name + "'",
                    "Registered: " + known +
                        ". Register custom layers with keras::register_layer(class_name, factory, package).");
  }
  // A factory reads its config with nlohmann accessors; a value of the wrong JSON type (from a
  // corrupt or hand-edited file) becomes a ValueError naming the class and layer.
  try {
    return it->second.factory(config);
  } catch (const json::exception& e) {
    std::string layer = config.is_object() && config.contains("name") && config["name"].is_string()
                            ? " '" + config["name"].get<std::string>() + "'"
                            : "";
    fail<ValueError>("layer_from_config " + class_name + layer, "config values of the documented types", e.what());
  }
}

std::vector<std::string> registered_layers() {
  std::vector<std::string> out;
  for (const auto& [name, e] : table()) out.push_back(name);
  return out;
}

bool is_layer_registered(const std::string& class_name) { return table().count(class_name) > 0; }

std::string registered_layer_name(const std::string& class_name) {
  auto it = table().find(class_name);
  if (it == table().end() || it->second.package.empty()) return "";
  return it->second.package + ">" + class_name;
}

std::string registered_layer_module(const std::string& class_name) {
  auto it = table().find(class_name);
  return it == table().end() ? "" : it->second.module;
}

}  // namespace keras
