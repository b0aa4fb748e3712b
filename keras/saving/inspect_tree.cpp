// The Keras 3 weights tree of inspect_file (keras-formats.md section 3, FACTS.md section 4):
// layers/<key>/vars/<i> where <key> is a deduplicated class name and vars@name the layer's name,
// optimizer/vars/<i>, and the model's own vars/<i>. tf_keras's variant (metrics/<key>/vars, no
// name attributes) reads the same way, with keys standing in for names.
#include <algorithm>
#include <map>

#include "keras/saving/detail/inspect_walk.h"

namespace keras::detail::inspect {
namespace {

// "layers/functional/layers/conv2d" -> "backbone/backbone_conv" (each object's vars@name).
std::string tree_layer_path(const hdf5::Group& root, const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string piece = parts[i];
    if (parts[i] == "layers" && i + 1 < parts.size()) {
      ++i;
      const std::string vars = join(parts, 0, i + 1) + "/vars";
      piece = root.has_group(vars) && root.open_group(vars).has_attr("name") ? root.open_group(vars).read_string_attr("name")
                                                                             : parts[i];
    }
    out += (out.empty() ? "" : "/") + piece;
  }
  return out;
}

// The objects of the `layers` containers, depth first, as layer entries.
void tree_layers(const hdf5::Group& root, const std::string& object, int depth, json& out) {
  const std::string container = object.empty() ? "layers" : object + "/layers";
  if (depth > kMaxDepth || !root.has_group(container)) return;
  std::vector<std::string> keys = root.open_group(container).children();
  std::sort(keys.begin(), keys.end(), natural_less);
  for (const auto& key : keys) {
    const std::string rel = container + "/" + key;
    if (!root.has_group(rel)) continue;
    const std::string path = tree_layer_path(root, split_path(rel));
    const std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    out.push_back({{"name", name}, {"class_name", nullptr}, {"path", path}, {"depth", depth},
                   {"trainable", nullptr}, {"hdf5_path", "/" + rel}});
    tree_layers(root, rel, depth + 1, out);
  }
}

}  // namespace

void describe_tree(Lister& files, json& d) {
  const hdf5::Group& root = files.root();
  json tree_objects = json::array();
  tree_layers(root, "", 0, tree_objects);
  if (d["layers"].empty()) {
    d["layers"] = tree_objects;
  } else {  // a .keras: point the config's layers at the groups holding their weights
    std::map<std::string, std::string> group_of;
    for (const auto& t : tree_objects) group_of[t["path"].get<std::string>()] = t["hdf5_path"].get<std::string>();
    for (auto& layer : d["layers"])
      if (auto it = group_of.find(layer["path"].get<std::string>()); it != group_of.end()) layer["hdf5_path"] = it->second;
  }
  // Weights in the order of the layers list (a .keras: the config's, so model order), the
  // model's own variables first; objects the list lacks keep the file's order after them.
  std::map<std::string, size_t> rank;
  for (const auto& layer : d["layers"])
    if (layer["hdf5_path"].is_string()) rank.emplace(layer["hdf5_path"].get<std::string>().substr(1), rank.size() + 1);
  auto rank_of = [&](const std::string& rel) {
    const auto parts = split_path(rel);
    if (parts.size() < 2 || parts[parts.size() - 2] != "vars") return rank.size() + 1;
    auto it = rank.find(join(parts, 0, parts.size() - 2));
    return parts.size() == 2 ? size_t{0} : it == rank.end() ? rank.size() + 1 : it->second;
  };
  std::vector<std::string> ordered = files.all();
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const std::string& a, const std::string& b) { return rank_of(a) < rank_of(b); });
  json optimizer_vars = json::array();
  for (const auto& rel : ordered) {
    const auto parts = split_path(rel);
    const bool is_var = parts.size() >= 2 && parts[parts.size() - 2] == "vars" && is_number(parts.back());
    json index = is_var ? json(std::stoi(parts.back())) : json(nullptr);
    if (parts[0] == "optimizer") {
      files.add(optimizer_vars, rel, nullptr, nullptr, index);
      continue;
    }
    json layer = nullptr;
    if (is_var) {
      std::vector<std::string> object(parts.begin(), parts.end() - 2);
      if (!object.empty()) {
        layer = tree_layer_path(root, object);
      } else if (root.has_group("vars") && root.open_group("vars").has_attr("name")) {
        layer = root.open_group("vars").read_string_attr("name");  // the model's own variables
      }
    }
    files.add(d["weights"], rel, layer, nullptr, index);
  }
  if (optimizer_vars.empty() && !root.has_group("optimizer")) return;
  if (d["optimizer"].is_null()) d["optimizer"] = {{"class_name", nullptr}, {"name", nullptr}, {"config", nullptr}};
  json& opt = d["optimizer"];
  if (opt["name"].is_null() && root.has_group("optimizer/vars") && root.open_group("optimizer/vars").has_attr("name"))
    opt["name"] = root.open_group("optimizer/vars").read_string_attr("name");
  // Keras 3 creates `iterations` first, then a float learning rate's variable; slots follow
  // unnamed (their names are not stored).
  const json* lr = member(opt["config"], "learning_rate");
  const bool lr_variable = !lr || lr->is_number();
  for (auto& v : optimizer_vars) {
    const bool scalar = v["shape"].empty();
    if (v["index"] == 0 && scalar && v["dtype"].get<std::string>().rfind("int", 0) == 0) v["name"] = "iteration";
    if (v["index"] == 1 && scalar && lr_variable && v["dtype"].get<std::string>().rfind("float", 0) == 0)
      v["name"] = "learning_rate";
  }
  opt["variables"] = std::move(optimizer_vars);
}

}  // namespace keras::detail::inspect
