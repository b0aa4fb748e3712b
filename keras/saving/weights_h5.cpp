#include "keras/saving/weights_h5.h"

#include <map>
#include <set>

#include "keras/saving/detail/weights_stage.h"
#include "layers/layer.h"
#include "optimizers/optimizer.h"

namespace keras {

using detail::join_path;
using detail::own_variables;
using detail::variable_names;
using detail::WeightStage;

namespace {

constexpr const char* kOptimizerVars = "optimizer/vars";

// One object of the tree: a layer and its path ("" for the model itself, "layers/dense", ...).
struct TreeNode {
  Layer* layer;
  std::string path;
  std::string vars_path() const { return join_path(path, "vars"); }
};

// Keras's walk (saving_lib._save_state): the object, then each child of its `layers` container
// under a key deduplicated per container, or, for a layer with sublayer_keys(), each sublayer
// under its key right below the layer; an object already visited is skipped.
void walk(Layer& layer, const std::string& path, std::set<const Layer*>& visited, std::vector<TreeNode>& out) {
  if (!visited.insert(&layer).second) return;
  out.push_back({&layer, path});
  const std::string container = join_path(path, "layers");
  std::map<std::string, int> used;
  const auto children = detail::child_layers(layer);
  // A composite layer (MultiHeadAttention) names its children itself, directly under its path.
  const std::vector<std::string> keys = layer.sublayer_keys();
  if (!keys.empty() && keys.size() == children.size()) {
    for (size_t i = 0; i < children.size(); ++i) walk(*children[i], join_path(path, keys[i]), visited, out);
    return;
  }
  for (const auto& child : children) {
    std::string key = snake_case(child->class_name());
    auto it = used.find(key);
    if (it == used.end()) {
      used[key] = 0;
    } else {
      key += "_" + std::to_string(++it->second);
    }
    walk(*child, join_path(container, key), visited, out);
  }
}

std::vector<TreeNode> tree_of(const Layer& model) {
  std::vector<TreeNode> out;
  std::set<const Layer*> visited;
  // The walk only reads; the readers need the same nodes with mutable layers.
  walk(const_cast<Layer&>(model), "", visited, out);
  return out;
}

void write_vars(hdf5::Group& root, const std::string& vars_path, const std::string& name,
                const std::vector<Variable>& vars) {
  hdf5::Group group = root.create_group(vars_path);
  group.write_string_attr("name", name);
  for (size_t i = 0; i < vars.size(); ++i) group.write_dataset(std::to_string(i), vars[i].value());
}

// Every `vars` group below `path`, except the model's own and the optimizer's (they are not
// layers), as (path, name attribute or ""). Depth-limited: HDF5 links may form cycles.
void collect_entries(const hdf5::Group& root, const std::string& path, std::vector<std::pair<std::string, std::string>>& out,
                     int depth = 0) {
  if (depth > 64)
    fail<IOError>(root.where(path), "a layer tree at most 64 groups deep", "a deeper one",
                  "The file is corrupt or its groups link in a cycle.");
  hdf5::Group group = path.empty() ? root : root.open_group(path);
  for (const auto& child : group.children()) {
    std::string child_path = join_path(path, child);
    if (!group.has_group(child)) continue;
    if (path.empty() && (child == "vars" || child == "optimizer")) continue;
    if (child == "vars") {
      hdf5::Group vars = group.open_group(child);
      out.emplace_back(child_path, vars.has_attr("name") ? vars.read_string_attr("name") : "");
    } else {
      collect_entries(root, child_path, out, depth + 1);
    }
  }
}

// The file's path for `vars_path`: as is, or with the `_layer_checkpoint_dependencies`
// containers that Keras 2.13-2.15 wrote instead of `layers`.
std::string resolve(const hdf5::Group& root, const std::string& vars_path) {
  if (root.has_group(vars_path)) return vars_path;
  std::string alt, part;
  for (size_t start = 0; start <= vars_path.size();) {
    size_t slash = vars_path.find('/', start);
    part = vars_path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    alt = join_path(alt, part == "layers" ? "_layer_checkpoint_dependencies" : part);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return root.has_group(alt) ? alt : vars_path;
}

// Reads the `vars` group at `vars_path` into `vars`, checking its count and every shape first.
// A mismatch fails, or (skip_mismatch) skips the whole object.
void stage_vars(const hdf5::Group& root, const std::string& vars_path, const std::vector<Variable>& vars,
                const std::string& owner, WeightStage& stage) {
  const std::string entry = "/" + vars_path;
  hdf5::Group group = root.open_group(vars_path);
  std::vector<std::string> keys = group.children();
  if (keys.size() != vars.size()) {
    stage.mismatch(root.where(vars_path), entry,
                   std::to_string(vars.size()) + " variable(s) for " + owner +
                       (vars.empty() ? std::string() : " (" + variable_names(vars) + ")"),
                   std::to_string(keys.size()), vars,
                   vars.empty() ? "A layer gets its weights when built: give the model an Input or call it on data "
                                  "before loading."
                                : "");
    return;
  }
  std::vector<Tensor> values;
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::string key = std::to_string(i);
    if (!group.has_dataset(key)) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
      stage.mismatch(root.where(join_path(vars_path, key)),
                     entry, "a dataset (entries 0.." + std::to_string(vars.size() - 1) + ")", "none; entries are " + names,
                     vars);
      return;
    }
    hdf5::Dataset ds = group.open_dataset(key);
    Shape stored = ds.shape();
    if (stored != vars[i].shape()) {
      stage.mismatch(root.where(join_path(vars_path, key)), entry,
                     "shape " + shape_str(vars[i].shape()) + " for '" + vars[i].path() + "' of " + owner,
                     shape_str(stored), vars);
      return;
    }
    values.push_back(ds.read());
  }
  for (size_t i = 0; i < vars.size(); ++i) stage.add(vars[i], values[i]);
}

// Structural matching: each node at its own path.
void stage_by_path(const hdf5::Group& root, const std::vector<TreeNode>& nodes, WeightStage& stage,
                   std::set<std::string>& used) {
  for (const auto& node : nodes) {
    std::vector<Variable> vars = own_variables(*node.layer);
    const std::string vars_path = resolve(root, node.vars_path());
    used.insert(vars_path);
    if (!root.has_group(vars_path)) {
      if (vars.empty()) continue;  // Keras tolerates missing groups of weightless objects
      stage.mismatch(root.where(vars_path), "/" + vars_path,
                     "a group with " + std::to_string(vars.size()) + " variable(s) for " + node.layer->where(),
                     "nothing", vars);
      continue;
    }
    stage_vars(root, vars_path, vars, node.layer->where(), stage);
  }
}

void stage_by_name(const hdf5::Group& root, const std::vector<TreeNode>& nodes,
                   const std::vector<std::pair<std::string, std::string>>& entries, const LoadWeightsOptions& options,
                   WeightStage& stage, std::set<std::string>& used) {
  std::map<std::string, std::vector<std::string>> by_target;  // model layer name -> entry paths
  for (const auto& [path, saved] : entries) {
    auto mapped = options.name_map.find(saved);
    by_target[mapped == options.name_map.end() ? saved : mapped->second].push_back(path);
  }
  for (size_t n = 1; n < nodes.size(); ++n) {  // nodes[0] is the model itself
    const TreeNode& node = nodes[n];
    std::vector<Variable> vars = own_variables(*node.layer);
    auto it = by_target.find(node.layer->name());
    if (it == by_target.end()) {
      stage.missing(vars);
      continue;
    }
    std::string chosen;
    for (const auto& p : it->second)
      if (p == node.vars_path()) chosen = p;
    if (chosen.empty() && it->second.size() == 1) chosen = it->second[0];
    if (chosen.empty()) {
      std::string list;
      for (const auto& p : it->second) list += (list.empty() ? "/" : ", /") + p;
      stage.mismatch(root.where(), "layer name '" + node.layer->name() + "'",
                     "one entry named '" + node.layer->name() + "' for " + node.layer->where(), list, vars);
      for (const auto& p : it->second) used.insert(p);
      continue;
    }
    used.insert(chosen);
    stage_vars(root, chosen, vars, node.layer->where(), stage);
  }
}

void stage_optimizer(const hdf5::Group& root, Layer& model, optimizers::Optimizer& optimizer, bool by_name,
                     WeightStage& stage) {
  if (!root.has_group(kOptimizerVars)) {
    if (optimizer.built()) stage.missing(optimizer.variables());
    return;
  }
  if (by_name) {
    stage.skip(std::string("/") + kOptimizerVars, "optimizer state is restored by position, not with by_name");
    return;
  }
  // As Keras's load: the optimizer's slots exist before its state is read.
  if (!optimizer.built()) optimizer.build(model.trainable_weights());
  size_t saved = root.open_group(kOptimizerVars).children().size();
  stage_vars(root, kOptimizerVars, detail::optimizer_targets(optimizer.variables(), saved, stage),
             "optimizer '" + optimizer.name() + "'", stage);
}

}  // namespace

void write_weights_tree(hdf5::Group& root, const Layer& model, const optimizers::Optimizer* optimizer) {
  for (const auto& node : tree_of(model)) write_vars(root, node.vars_path(), node.layer->name(), own_variables(*node.layer));
  if (optimizer && optimizer->built()) write_vars(root, kOptimizerVars, optimizer->name(), optimizer->variables());
}

LoadReport read_weights_tree(const hdf5::Group& root, Layer& model, optimizers::Optimizer* optimizer,
                             const LoadWeightsOptions& options) {
  if (!options.name_map.empty() && !options.by_name)
    fail<ValueError>("read_weights_tree(" + root.file_name() + ")", "name_map together with by_name=true",
                     "name_map without by_name");
  WeightStage stage(options.skip_mismatch, options.strict, root.file_name());
  std::vector<TreeNode> nodes = tree_of(model);
  std::vector<std::pair<std::string, std::string>> entries;
  collect_entries(root, "", entries);
  std::set<std::string> used;
  if (options.by_name) {
    stage_by_name(root, nodes, entries, options, stage, used);
  } else {
    stage_by_path(root, nodes, stage, used);
  }
  for (const auto& [path, name] : entries) {
    if (used.count(path) || root.open_group(path).children().empty()) continue;
    std::string reason = !options.by_name ? "no object at this path in the model"
                         : name.empty()     ? "no 'name' attribute (a file from before Keras 3.6) to match by"
                                            : "no layer named '" + name + "' in the model";
    stage.skip("/" + path, reason);
  }
  if (optimizer) {
    stage_optimizer(root, model, *optimizer, options.by_name, stage);
  } else if (root.has_group(kOptimizerVars)) {
    stage.skip(std::string("/") + kOptimizerVars, "no optimizer to restore into", /*strict_counts=*/false);
  }
  return stage.commit();
}

}  // namespace keras
