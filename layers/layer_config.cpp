#include "layers/layer_config.h"

#include "backend/errors.h"

namespace keras::config {

json keras_object(const std::string& module, const std::string& class_name, const json& config) {
  return {{"module", module}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
}

std::pair<std::string, json> unwrap_object(const json& j, const std::string& where) {
  if (j.is_string()) return {j.get<std::string>(), json::object()};
  if (j.is_object() && j.contains("class_name") && j["class_name"].is_string()) {
    json inner = j.contains("config") && j["config"].is_object() ? j["config"] : json::object();
    return {j["class_name"].get<std::string>(), inner};
  }
  fail<ValueError>(where, "a name or an object {\"class_name\", \"config\"}", j.dump());
}

std::string dtype_from_config(const json& j) {
  if (j.is_null()) return "";  // the global policy, as Keras
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object()) {
    // Keras 3 DTypePolicy {"config": {"name": ...}}; Keras 2 Policy likewise.
    if (j.contains("config") && j["config"].is_object() && j["config"].contains("name"))
      return j["config"]["name"].get<std::string>();
    if (j.contains("name") && j["name"].is_string()) return j["name"].get<std::string>();
  }
  fail<TypeError>("layer config 'dtype'", "a dtype name or a DTypePolicy object", j.dump());
}

std::string activation_from_config(const json& j) {
  if (j.is_null()) return "linear";
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("config")) {
    const json& c = j["config"];
    if (c.is_string()) return c.get<std::string>();
    if (c.is_object() && c.contains("name") && c["name"].is_string()) return c["name"].get<std::string>();
  }
  if (j.is_object() && j.contains("class_name") && j["class_name"].is_string()) return j["class_name"].get<std::string>();
  fail<ValueError>("layer config 'activation'", "an activation name", j.dump());
}

Shape shape_from_json(const json& j, const std::string& where) {
  if (j.is_number_integer()) return {j.get<int64_t>()};
  if (!j.is_array()) fail<ValueError>(where, "a list of extents", j.dump());
  Shape s;
  for (const auto& d : j) {
    if (d.is_null()) s.push_back(-1);
    else if (d.is_number_integer()) s.push_back(d.get<int64_t>());
    else fail<ValueError>(where, "integer extents or null", j.dump());
  }
  return s;
}

json shape_to_json(const Shape& s, bool null_for_unknown) {
  json out = json::array();
  for (auto d : s) out.push_back(d < 0 && null_for_unknown ? json(nullptr) : json(d));
  return out;
}

std::optional<int64_t> optional_int(const json& c, const std::string& key) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  return c[key].get<int64_t>();
}

}  // namespace keras::config
