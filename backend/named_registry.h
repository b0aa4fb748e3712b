// A thread-safe map from Keras class names (and their snake_case aliases) to factories: the one
// mechanism behind the loss and metric registries. Only registered factories can be built, so
// nothing read from a file can run code that was not compiled in.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace keras {

template <class Factory>
class NamedRegistry {
 public:
  // A second registration of a class name replaces the first.
  void add(const std::string& class_name, Factory factory, const std::vector<std::string>& aliases) {
    std::lock_guard<std::mutex> lock(mutex_);
    factories_[class_name] = std::move(factory);
    for (const auto& a : aliases) aliases_[a] = class_name;
  }
  // The class name `identifier` names (itself or through an alias); empty when unknown.
  std::string canonical(const std::string& identifier) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (factories_.count(identifier)) return identifier;
    auto it = aliases_.find(identifier);
    return it == aliases_.end() ? std::string() : it->second;
  }
  // The factory of a canonical class name (std::out_of_range when unknown).
  Factory factory(const std::string& class_name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return factories_.at(class_name);
  }
  // Class names, then aliases.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, f] : factories_) out.push_back(name);
    for (const auto& [alias, cls] : aliases_) out.push_back(alias);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace keras
