// inspect_file: the kinds of Keras files read generically (keras-formats.md sections 1-5,
// tests/data/keras/FACTS.md). No model is built, so a file whose layers this framework does not
// know is still described. Every dataset is listed once: the kind's own order first (layer_names,
// weight_names, vars/<i>), then a sweep of the whole file picks up whatever is left.
#include "keras/saving/inspect.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "backend/errors.h"
#include "keras/utils/zip.h"
#include "keras/saving/detail/inspect_walk.h"
#include "keras/utils/file_util.h"
#include "keras/saving/hdf5/hdf5.h"

namespace keras {
namespace {

using json = nlohmann::json;
using namespace detail::inspect;

json optional_string_attr(const hdf5::Object& obj, const std::string& name) {
  return obj.has_attr(name) ? json(obj.read_string_attr(name)) : json(nullptr);
}

json parse_json(const std::string& text, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail<ValueError>(where, "valid JSON", "a parse error at byte " + std::to_string(e.byte), "The file is corrupt.");
  }
}

// ---- layers from a model config (Keras 2 or 3 schema) ----

void config_layers(const json& model, const std::string& prefix, int depth, json& out) {
  if (depth > kMaxDepth) fail<ValueError>("model config", "nesting at most " + std::to_string(kMaxDepth) + " deep", "more");
  const json* config = member(model, "config");
  const json* layers = config ? member(*config, "layers") : nullptr;
  if (!layers || !layers->is_array()) return;
  for (const json& layer : *layers) {
    const json* lc = member(layer, "config");
    json name = lc ? string_member(*lc, "name") : json(nullptr);
    if (name.is_null()) name = string_member(layer, "name");
    const std::string path = prefix + (prefix.empty() ? "" : "/") + (name.is_string() ? name.get<std::string>() : "?");
    const json* trainable = lc ? member(*lc, "trainable") : nullptr;
    out.push_back({{"name", name}, {"class_name", string_member(layer, "class_name")}, {"path", path},
                   {"depth", depth}, {"trainable", trainable && trainable->is_boolean() ? *trainable : json(nullptr)},
                   {"hdf5_path", nullptr}});
    config_layers(layer, path, depth + 1, out);
  }
}

json model_summary(const json& config) {
  const json* c = member(config, "config");
  return {{"class_name", string_member(config, "class_name")}, {"name", c ? string_member(*c, "name") : json(nullptr)}};
}

// ---- legacy layout: layer_names + one group per layer with weight_names ----

std::vector<std::string> string_list(const hdf5::Object& obj, const std::string& name) {
  return obj.has_string_list_attr(name) ? obj.read_string_list_attr(name) : std::vector<std::string>{};
}

void describe_legacy_weights(Lister& files, const std::string& base, json& d, bool layers_from_file) {
  const hdf5::Group group = base.empty() ? files.root() : files.root().open_group(base);
  const std::string prefix = base.empty() ? "" : base + "/";
  std::vector<std::string> layers = string_list(group, "layer_names");
  for (const auto& extra : std::vector<std::string>{"top_level_model_weights"})
    if (group.has_group(extra) && std::find(layers.begin(), layers.end(), extra) == layers.end()) layers.push_back(extra);
  for (const auto& layer : layers) {
    if (!group.has_group(layer)) continue;  // a weightless layer may have no group at all
    if (layers_from_file && layer != "top_level_model_weights")
      d["layers"].push_back({{"name", layer}, {"class_name", nullptr}, {"path", layer}, {"depth", 0},
                             {"trainable", nullptr}, {"hdf5_path", "/" + prefix + layer}});
    const hdf5::Group lg = group.open_group(layer);
    const auto names = string_list(lg, "weight_names");
    for (size_t i = 0; i < names.size(); ++i)
      files.add(d["weights"], prefix + layer + "/" + names[i], layer, names[i], static_cast<int>(i));
    files.add_rest(d["weights"], prefix + layer, layer, prefix + layer);
  }
  if (!layers_from_file)
    for (auto& entry : d["layers"])
      if (entry["depth"] == 0 && entry["name"].is_string() && group.has_group(entry["name"].get<std::string>()))
        entry["hdf5_path"] = "/" + prefix + entry["name"].get<std::string>();
}

void describe_legacy_optimizer(Lister& files, json& d) {
  if (!files.root().has_group("optimizer_weights")) return;
  const hdf5::Group group = files.root().open_group("optimizer_weights");
  if (d["optimizer"].is_null()) d["optimizer"] = {{"class_name", nullptr}, {"name", nullptr}, {"config", nullptr}};
  json vars = json::array();
  const auto names = string_list(group, "weight_names");
  for (size_t i = 0; i < names.size(); ++i) files.add(vars, "optimizer_weights/" + names[i], nullptr, names[i], static_cast<int>(i));
  files.add_rest(vars, "optimizer_weights", nullptr, "optimizer_weights");
  d["optimizer"]["variables"] = std::move(vars);
}

void set_optimizer_from(const json& object, json& d) {
  if (!object.is_object()) return;
  const json* config = member(object, "config");
  d["optimizer"] = {{"class_name", string_member(object, "class_name")},
                    {"name", config ? string_member(*config, "name") : json(nullptr)},
                    {"config", config && config->is_object() ? *config : json(nullptr)},
                    {"variables", json::array()}};
}

// ---- the kinds ----

void describe_hdf5(const hdf5::File& file, json& d) {
  Lister files(file.root());
  const hdf5::Group root = file.root();
  const std::string where = "'" + file.name() + "'";
  if (root.has_attr("model_config") || root.has_group("model_weights")) {
    d["kind"] = "h5";
    const hdf5::Group mw = root.has_group("model_weights") ? root.open_group("model_weights") : root;
    d["keras_version"] = optional_string_attr(root.has_attr("keras_version") ? root : mw, "keras_version");
    d["backend"] = optional_string_attr(root.has_attr("backend") ? root : mw, "backend");
    if (root.has_attr("model_config")) {
      const json config = parse_json(root.read_string_attr("model_config"), where + ": model_config");
      d["model"] = model_summary(config);
      config_layers(config, "", 0, d["layers"]);
    }
    if (root.has_attr("training_config")) {
      d["compile_config"] = parse_json(root.read_string_attr("training_config"), where + ": training_config");
      if (const json* opt = member(d["compile_config"], "optimizer_config")) set_optimizer_from(*opt, d);
    }
    if (root.has_group("model_weights")) describe_legacy_weights(files, "model_weights", d, d["layers"].empty());
    describe_legacy_optimizer(files, d);
  } else if (root.has_string_list_attr("layer_names")) {
    d["kind"] = "legacy_weights.h5";
    d["keras_version"] = optional_string_attr(root, "keras_version");
    d["backend"] = optional_string_attr(root, "backend");
    describe_legacy_weights(files, "", d, true);
  } else if (root.has_group("layers") || root.has_group("optimizer") || root.has_group("vars")) {
    d["kind"] = "weights.h5";
    describe_tree(files, d);
  } else {
    std::string children;
    for (const auto& c : root.children()) children += (children.empty() ? "" : ", ") + c;
    fail<IOError>(where, "a Keras HDF5 file (a model_config or layer_names attribute, or a layers/optimizer/vars tree)",
                  "an HDF5 file with top-level entries [" + children + "]", "It was not written by Keras.");
  }
  files.add_rest(d["weights"], "", nullptr, "");  // anything the layout did not account for
}

void describe_keras_zip(const std::string& path, json& d) {
  const auto entries = zip::read_archive_bytes(read_file_bytes(path), path);
  const std::string where = "'" + path + "'";
  const zip::Entry *config = nullptr, *weights = nullptr, *metadata = nullptr;
  for (const auto& e : entries) {
    if (e.name == "config.json") config = &e;
    if (e.name == "model.weights.h5") weights = &e;
    if (e.name == "metadata.json") metadata = &e;
  }
  if (!config) fail<IOError>(where, "a .keras archive with config.json", "no such entry", "The file is not a Keras model.");
  d["kind"] = "keras";
  if (metadata) {
    const json meta = parse_json(metadata->data, where + ": metadata.json");
    d["keras_version"] = string_member(meta, "keras_version");
    d["date_saved"] = string_member(meta, "date_saved");
  }
  const json cfg = parse_json(config->data, where + ": config.json");
  d["model"] = model_summary(cfg);
  config_layers(cfg, "", 0, d["layers"]);
  if (const json* cc = member(cfg, "compile_config"); cc && cc->is_object()) {
    d["compile_config"] = *cc;
    if (const json* opt = member(*cc, "optimizer")) set_optimizer_from(*opt, d);
  }
  if (!weights) {
    const bool npz = std::any_of(entries.begin(), entries.end(), [](const auto& e) { return e.name == "model.weights.npz"; });
    fail<IOError>(where, "a .keras archive with model.weights.h5", npz ? "model.weights.npz" : "no weights entry",
                  npz ? "Weights saved as .npz are not supported." : "The file is not a Keras model.");
  }
  auto file = hdf5::File::open_image(weights->data, path + ": model.weights.h5");
  Lister files(file.root());
  describe_tree(files, d);
  files.add_rest(d["weights"], "", nullptr, "");
}

// The first bytes, to tell a zip from HDF5 before either reader complains in its own terms.
std::string file_prefix(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail<IOError>("'" + path + "'", "an existing file", "no such file");
  if (!std::filesystem::is_regular_file(path, ec)) fail<IOError>("'" + path + "'", "a file", "a directory or special file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>("'" + path + "'", "a readable file", "one that cannot be opened");
  std::string bytes(64 * 1024, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

}  // namespace

json inspect_file(const std::string& path) {
  json d = {{"file", path},          {"kind", nullptr},        {"keras_version", nullptr}, {"backend", nullptr},
            {"date_saved", nullptr}, {"model", nullptr},       {"layers", json::array()},  {"weights", json::array()},
            {"optimizer", nullptr},  {"compile_config", nullptr}};
  const std::string prefix = file_prefix(path);
  if (prefix.rfind("PK\x03\x04", 0) == 0 || prefix.rfind("PK\x05\x06", 0) == 0) {
    describe_keras_zip(path, d);
  } else if (hdf5::looks_like_hdf5(prefix)) {
    describe_hdf5(hdf5::File::open(path), d);
  } else {
    fail<IOError>("'" + path + "'", "a Keras file (a .keras zip archive or an HDF5 .h5)",
                  prefix.empty() ? "an empty file" : "neither a zip archive nor HDF5", "It is not a Keras file.");
  }
  return d;
}

}  // namespace keras
