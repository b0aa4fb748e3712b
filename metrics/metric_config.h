// Small readers for the optional keys of metric configs (Keras writes None as null), shared by
// the confusion, AUC, F-score and IoU metrics. A key that is missing or null keeps the default;
// a key of the wrong JSON type is a ValueError naming the key, so a corrupt config never turns
// silently into a default metric.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/errors.h"

namespace keras::metrics::config {

using json = nlohmann::json;

inline bool present(const json& c, const char* key) { return c.is_object() && c.contains(key) && !c[key].is_null(); }

inline void read(const json& c, const char* key, double& out) {
  if (!present(c, key)) return;
  if (!c[key].is_number()) fail<ValueError>(std::string("metric config '") + key + "'", "a number", c[key].dump());
  out = c[key].get<double>();
}

inline void read(const json& c, const char* key, int& out) {
  if (!present(c, key)) return;
  if (!c[key].is_number_integer()) fail<ValueError>(std::string("metric config '") + key + "'", "an integer", c[key].dump());
  out = c[key].get<int>();
}

inline void read(const json& c, const char* key, bool& out) {
  if (!present(c, key)) return;
  if (!c[key].is_boolean()) fail<ValueError>(std::string("metric config '") + key + "'", "a boolean", c[key].dump());
  out = c[key].get<bool>();
}

inline void read(const json& c, const char* key, std::string& out) {
  if (!present(c, key)) return;
  if (!c[key].is_string()) fail<ValueError>(std::string("metric config '") + key + "'", "a string", c[key].dump());
  out = c[key].get<std::string>();
}

template <class T>
void read(const json& c, const char* key, std::optional<T>& out) {
  if (!present(c, key)) return;
  T v{};
  read(c, key, v);
  out = v;
}

inline void read(const json& c, const char* key, std::vector<double>& out) {
  if (!present(c, key)) return;
  const json& v = c[key];
  if (v.is_number()) {
    out = {v.get<double>()};
    return;
  }
  if (!v.is_array()) fail<ValueError>(std::string("metric config '") + key + "'", "a number or a list of numbers", v.dump());
  out.clear();
  for (const auto& e : v) {
    if (!e.is_number()) fail<ValueError>(std::string("metric config '") + key + "'", "a list of numbers", v.dump());
    out.push_back(e.get<double>());
  }
}

template <class T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace keras::metrics::config
