#include "layers/layer_registry.h"

#include <map>

namespace keras {
namespace {
std::map<std::string, LayerFactory>& factories() {
  static std::map<std::string, LayerFactory> table;
  return table;
}
}  // namespace

void register_layer(const std::string& class_name, LayerFactory factory) { factories()[class_name] = std::move(factory); }

LayerPtr layer_from_config(const std::string& class_name, const json& config) {
  auto it = factories().find(class_name);
  if (it == factories().end()) {
    std::string known;
    for (const auto& [name, f] : factories()) known += (known.empty() ? "" : ", ") + name;
    fail<TypeError>("layer_from_config", "a registered layer class", "'" + class_name + "'",
                    "Registered: " + known + ". Register custom layers with keras::register_layer.");
  }
  return it->second(config);
}

std::vector<std::string> registered_layers() {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories()) out.push_back(name);
  return out;
}

}  // namespace keras
