// format_inspection: inspect_file's description as aligned text tables. Reads the description
// defensively (any key may be missing or null) since callers may pass an edited document.
#include <sstream>

#include "keras/saving/inspect.h"

namespace keras {
namespace {

using json = nlohmann::json;

const json& at(const json& j, const char* key) {
  static const json null_value;
  if (!j.is_object()) return null_value;
  auto it = j.find(key);
  return it == j.end() ? null_value : *it;
}

// Invalid UTF-8 in a file's strings is replaced rather than thrown on: a report must print.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string text(const json& j) {
  if (j.is_null()) return "-";
  if (j.is_string()) return j.get<std::string>();
  if (j.is_boolean()) return j.get<bool>() ? "yes" : "no";
  return dump(j);
}

// Python's tuple form, as h5py and Keras print shapes: (), (16,), (8, 16).
std::string shape_text(const json& shape) {
  if (!shape.is_array()) return "?";
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + text(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// Columns padded to their widest cell; the last one unpadded (no trailing blanks).
void table(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return;
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

void variables_table(std::ostream& out, const json& list) {
  std::vector<std::vector<std::string>> rows = {{"hdf5 path", "layer", "name", "shape", "dtype"}};
  for (const auto& w : list)
    rows.push_back({text(at(w, "path")), text(at(w, "layer")), text(at(w, "name")), shape_text(at(w, "shape")),
                    text(at(w, "dtype"))});
  table(out, rows);
}

const char* kind_text(const std::string& kind) {
  if (kind == "keras") return "keras (.keras zip: config.json + model.weights.h5)";
  if (kind == "h5") return "h5 (full model, legacy HDF5)";
  if (kind == "weights.h5") return "weights.h5 (Keras 3 weights tree)";
  if (kind == "legacy_weights.h5") return "legacy_weights.h5 (Keras 2 weights-only HDF5)";
  return "?";
}

}  // namespace

std::string format_inspection(const json& d) {
  std::ostringstream out;
  const json& kind = at(d, "kind");
  const json& model = at(d, "model");
  std::vector<std::vector<std::string>> header = {
      {"file", text(at(d, "file"))},
      {"kind", kind.is_string() ? kind_text(kind.get<std::string>()) : "-"},
      {"keras_version", text(at(d, "keras_version"))},
      {"backend", text(at(d, "backend"))}};
  if (!at(d, "date_saved").is_null()) header.push_back({"date_saved", text(at(d, "date_saved"))});
  header.push_back({"model", model.is_null() ? "- (weights only)"
                                             : text(at(model, "class_name")) + " '" + text(at(model, "name")) + "'"});
  table(out, header);

  const json& layers = at(d, "layers");
  out << "\nLayers (" << (layers.is_array() ? layers.size() : 0) << (model.is_null() ? ", as named in the file" : ", from the config")
      << "):\n";
  std::vector<std::vector<std::string>> rows = {{"name", "class", "trainable", "weights group"}};
  for (const auto& l : layers.is_array() ? layers : json::array()) {
    const int depth = at(l, "depth").is_number_integer() ? at(l, "depth").get<int>() : 0;
    rows.push_back({std::string(2 * static_cast<size_t>(std::max(depth, 0)), ' ') + text(at(l, "name")),
                    text(at(l, "class_name")), text(at(l, "trainable")), text(at(l, "hdf5_path"))});
  }
  table(out, rows);

  const json& weights = at(d, "weights");
  out << "\nWeights (" << (weights.is_array() ? weights.size() : 0) << " datasets"
      << (kind == "keras" ? " in model.weights.h5" : "") << "):\n";
  variables_table(out, weights.is_array() ? weights : json::array());
  if (kind == "keras" || kind == "weights.h5")
    out << "  (Keras 3 trees store no weight names: vars/<i> is the layer's i-th variable in creation order.)\n";

  const json& opt = at(d, "optimizer");
  if (opt.is_null()) {
    out << "\nOptimizer: none saved\n";
  } else {
    const json& vars = at(opt, "variables");
    const json& name = at(opt, "name");
    out << "\nOptimizer: " << (at(opt, "class_name").is_null() ? "class not recorded" : text(at(opt, "class_name")))
        << (name.is_null() ? "" : " '" + text(name) + "'") << ", " << (vars.is_array() ? vars.size() : 0)
        << " variables\n";
    const json& config = at(opt, "config");
    if (config.is_object()) {
      std::string line;
      for (const auto& [key, value] : config.items())
        if (!value.is_null() && key != "name") line += (line.empty() ? "" : ", ") + key + "=" + dump(value);
      out << "  config: " << line << "\n";
    }
    if (vars.is_array() && !vars.empty()) variables_table(out, vars);
  }

  const json& cc = at(d, "compile_config");
  if (cc.is_object()) {
    out << "\nCompile config (" << (kind == "keras" ? "compile_config" : "training_config") << "):\n";
    for (const auto& [key, value] : cc.items())
      if (key != "optimizer" && key != "optimizer_config") out << "  " << key << ": " << dump(value) << "\n";
  } else {
    out << "\nCompile config: none saved\n";
  }
  return out.str();
}

}  // namespace keras
