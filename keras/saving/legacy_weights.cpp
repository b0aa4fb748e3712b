#include "keras/saving/legacy_weights.h"

#include <map>
#include <set>

#include "keras/saving/detail/weights_stage.h"
#include "keras/models/model.h"
#include "layers/layer.h"
#include "optimizers/loss_scale_optimizer.h"

namespace keras {

using detail::own_variables;
using detail::variable_names;
using detail::WeightStage;

namespace {

constexpr const char* kTopLevel = "top_level_model_weights";

// The layers a legacy file lists: a model's layers, or a lone layer as a model of one.
std::vector<Layer*> legacy_layers(const Layer& model) {
  std::vector<Layer*> out;
  if (const auto* m = dynamic_cast<const Model*>(&model)) {
    for (const auto& l : m->layers()) out.push_back(l.get());
  } else {
    out.push_back(const_cast<Layer*>(&model));
  }
  return out;
}

bool is_lone_layer(const std::vector<Layer*>& layers, const Layer& model) {
  return layers.size() == 1 && layers[0] == &model;
}

// Keras 2's per-layer order (`layer.trainable_weights + layer.non_trainable_weights`).
std::vector<Variable> legacy_order(const Layer& layer) {
  std::vector<Variable> out = layer.trainable_weights();
  for (auto& v : layer.non_trainable_weights()) out.push_back(v);
  return out;
}

std::string weight_name(const Variable& v) { return v.path() + ":0"; }

// A layer as saved in the file.
struct SavedLayer {
  std::string name;
  hdf5::Group group;
  std::vector<std::string> weight_names;
};

// A layer name with '/' is a path of groups (tf_keras names MobileNetV3's layers
// "expanded_conv/depthwise/pad", "expanded_conv/depthwise", ...): an earlier layer may have made
// this one's group already, as h5py's require_group lets tf_keras reuse it.
void write_layer(hdf5::Group& group, const std::string& name, const std::vector<Variable>& vars) {
  hdf5::Group g = group.require_group(name);
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& v : vars) {
    names.push_back(weight_name(v));
    if (!seen.insert(names.back()).second)
      fail<ValueError>(g.where(), "distinct weight paths", "'" + v.path() + "' twice");
  }
  g.write_string_list_attr("weight_names", names);
  for (size_t i = 0; i < vars.size(); ++i) g.write_dataset(names[i], vars[i].value());
}

// The model's weights for `saved`, in the file's order: by name when the file's names are
// exactly the ones write_layer gives these weights, else by the legacy position order.
std::vector<Variable> match_order(const Layer& layer, const SavedLayer& saved) {
  std::vector<Variable> vars = legacy_order(layer);
  if (vars.size() != saved.weight_names.size()) return vars;
  std::map<std::string, Variable> by_name;
  for (const auto& v : vars) by_name.emplace(weight_name(v), v);
  std::vector<Variable> ordered;
  for (const auto& n : saved.weight_names) {
    auto it = by_name.find(n);
    if (it == by_name.end()) return vars;
    ordered.push_back(it->second);
    by_name.erase(it);
  }
  return ordered;
}

// Stages `vars` from the saved entries, position by position. A count mismatch skips the layer,
// a shape mismatch the weight (with skip_mismatch).
void stage_weights(const SavedLayer& saved, const std::vector<Variable>& vars, const std::string& owner,
                   WeightStage& stage) {
  const hdf5::Group& g = saved.group;
  const std::string entry = g.path();
  if (vars.size() != saved.weight_names.size()) {
    stage.mismatch(g.where(), entry,
                   std::to_string(vars.size()) + " weight(s) for " + owner +
                       (vars.empty() ? std::string() : " (" + variable_names(vars) + ")"),
                   std::to_string(saved.weight_names.size()) + " in weight_names", vars);
    return;
  }
  std::vector<std::pair<Variable, hdf5::Dataset>> checked;
  for (size_t i = 0; i < vars.size(); ++i) {
    hdf5::Dataset ds = g.open_dataset(saved.weight_names[i]);
    Shape stored = ds.shape();
    if (stored != vars[i].shape()) {
      stage.mismatch(ds.where(), ds.path(), "shape " + shape_str(vars[i].shape()) + " for '" + vars[i].path() + "' of " + owner,
                     shape_str(stored), {vars[i]});
      continue;
    }
    checked.emplace_back(vars[i], ds);
  }
  for (auto& [v, ds] : checked) stage.add(v, ds.read());
}

hdf5::Group weights_group(const hdf5::Group& group) {
  if (group.has_string_list_attr("layer_names")) return group;
  if (group.has_group("model_weights")) {
    hdf5::Group inner = group.open_group("model_weights");
    if (inner.has_string_list_attr("layer_names")) return inner;
  }
  fail<IOError>(group.where(), "Keras HDF5 layer weights (attribute 'layer_names' here or in 'model_weights')", "none",
                group.has_group("layers") || group.has_group("vars")
                    ? "This is a Keras 3 weights tree (.weights.h5); read it with read_weights_tree."
                    : "This is not a Keras weights file.");
}

std::vector<SavedLayer> saved_layers(const hdf5::Group& group) {
  if (!group.has_attr("keras_version"))
    fail<IOError>(group.where(), "an attribute 'keras_version'", "none",
                  "Files written by Keras 1 are not supported; re-save them with Keras 2 or 3.");
  std::string version = group.read_string_attr("keras_version");
  if (version.rfind("1.", 0) == 0)
    fail<IOError>(group.where(), "a file written by Keras 2 or 3", "keras_version " + version,
                  "Keras 1 kernels have other layouts; re-save the model with Keras 2 or 3.");
  std::vector<SavedLayer> out;
  for (const auto& name : group.read_string_list_attr("layer_names")) {
    hdf5::Group g = group.open_group(name);
    out.push_back({name, g, g.read_string_list_attr("weight_names")});
  }
  return out;
}

void stage_topological(const hdf5::Group& group, const std::vector<SavedLayer>& saved, const std::vector<Layer*>& layers,
                       WeightStage& stage) {
  std::vector<Layer*> model_side;
  for (Layer* l : layers)
    if (!l->weights().empty()) model_side.push_back(l);
  std::vector<const SavedLayer*> file_side;
  for (const auto& s : saved)
    if (!s.weight_names.empty()) file_side.push_back(&s);
  if (model_side.size() != file_side.size()) {
    std::string ours, theirs;
    for (Layer* l : model_side) ours += (ours.empty() ? "" : ", ") + l->name();
    for (const auto* s : file_side) theirs += (theirs.empty() ? "" : ", ") + s->name;
    fail<IOError>(group.where(), std::to_string(model_side.size()) + " saved layers with weights (model: " + ours + ")",
                  std::to_string(file_side.size()) + " (" + theirs + ")",
                  model_side.empty()
                      ? "Layer count mismatch: the model has no weights yet; give it an Input or call it on data first."
                      : "Layer count mismatch: the file was saved from a different model; by_name may load part of it.");
  }
  for (size_t i = 0; i < model_side.size(); ++i)
    stage_weights(*file_side[i], match_order(*model_side[i], *file_side[i]), model_side[i]->where(), stage);
}

void stage_by_name(const hdf5::Group& group, const std::vector<SavedLayer>& saved, const std::vector<Layer*>& layers,
                   const LoadWeightsOptions& options, WeightStage& stage) {
  std::map<std::string, std::vector<Layer*>> index;
  for (Layer* l : layers) index[l->name()].push_back(l);
  std::set<Layer*> matched;
  for (const auto& s : saved) {
    auto mapped = options.name_map.find(s.name);
    const std::string target = mapped == options.name_map.end() ? s.name : mapped->second;
    auto it = index.find(target);
    if (it == index.end()) {
      if (!s.weight_names.empty()) stage.skip(s.group.path(), "no layer named '" + target + "' in the model");
      continue;
    }
    for (Layer* l : it->second) {
      matched.insert(l);
      stage_weights(s, match_order(*l, s), l->where(), stage);
    }
  }
  for (Layer* l : layers)
    if (!matched.count(l)) stage.missing(l->weights());
}

}  // namespace

void write_legacy_weights(hdf5::Group& group, const Layer& model) {
  std::vector<Layer*> layers = legacy_layers(model);
  std::vector<std::string> names;
  for (Layer* l : layers) {
    if (l->name() == kTopLevel)
      fail<ValueError>(l->where(), "a layer name other than '" + std::string(kTopLevel) + "'", "that name",
                       "The legacy format reserves it; rename the layer.");
    names.push_back(l->name());
  }
  group.write_string_list_attr("layer_names", names);
  group.write_string_attr("backend", kLegacyBackend);
  group.write_string_attr("keras_version", kLegacyKerasVersion);
  for (Layer* l : layers) write_layer(group, l->name(), legacy_order(*l));
  write_layer(group, kTopLevel, is_lone_layer(layers, model) ? std::vector<Variable>{} : own_variables(model));
}

LoadReport read_legacy_weights(const hdf5::Group& group_in, Layer& model, const LoadWeightsOptions& options) {
  if (!options.name_map.empty() && !options.by_name)
    fail<ValueError>("read_legacy_weights(" + group_in.file_name() + ")", "name_map together with by_name=true",
                     "name_map without by_name");
  hdf5::Group group = weights_group(group_in);
  std::vector<SavedLayer> saved = saved_layers(group);
  std::vector<Layer*> layers = legacy_layers(model);
  WeightStage stage(options.skip_mismatch, options.strict, group_in.file_name());
  if (options.by_name) {
    stage_by_name(group, saved, layers, options, stage);
  } else {
    stage_topological(group, saved, layers, stage);
  }
  std::vector<Variable> top = is_lone_layer(layers, model) ? std::vector<Variable>{} : own_variables(model);
  if (group.has_group(kTopLevel)) {
    hdf5::Group g = group.open_group(kTopLevel);
    SavedLayer s{kTopLevel, g, g.read_string_list_attr("weight_names")};
    if (!s.weight_names.empty() || !top.empty()) stage_weights(s, top, "model '" + model.name() + "'", stage);
  } else {
    stage.missing(top);
  }
  return stage.commit();
}

namespace {
// tf_keras's LossScaleOptimizerV3 saves its inner optimizer's weights alone (the scale is not
// saved in a legacy file).
optimizers::Optimizer& legacy_state_owner(const optimizers::Optimizer& o) {
  auto* lso = dynamic_cast<const optimizers::LossScaleOptimizerImpl*>(&o);
  return lso ? *lso->inner_optimizer() : const_cast<optimizers::Optimizer&>(o);
}
}  // namespace

void write_legacy_optimizer_weights(hdf5::Group& group, const optimizers::Optimizer& given) {
  const optimizers::Optimizer& optimizer = legacy_state_owner(given);
  // tf_keras 2.11+'s layout, which tf_keras restores: "iteration:0", then the slots in Keras's
  // order, no learning rate (training_config carries it). Keras 3 restores no optimizer state
  // from a legacy .h5 of either generation, so nothing is lost for it.
  std::vector<Variable> vars;
  std::vector<std::string> names;
  for (const auto& v : optimizer.variables()) {
    const std::string path = v.path();
    const std::string leaf = path.substr(path.find('/') + 1);
    if (leaf == "learning_rate" && !optimizer.learning_rate_schedule()) continue;
    vars.push_back(v);
    names.push_back(leaf == "iteration" ? "iteration:0" : optimizer.class_name() + "/" + leaf + ":0");
  }
  group.write_string_list_attr("weight_names", names);
  for (size_t i = 0; i < vars.size(); ++i) group.write_dataset(names[i], vars[i].value());
}

LoadReport read_legacy_optimizer_weights(const hdf5::Group& group, optimizers::Optimizer& given, const Layer& model,
                                         bool skip_mismatch) {
  std::vector<std::string> names = group.read_string_list_attr("weight_names");
  if (!given.built()) given.build(model.trainable_weights());
  optimizers::Optimizer& optimizer = legacy_state_owner(given);
  WeightStage stage(skip_mismatch);
  std::vector<Variable> vars = detail::optimizer_targets(optimizer.variables(), names.size(), stage);
  SavedLayer s{"optimizer", group, names};
  stage_weights(s, vars, "optimizer '" + optimizer.name() + "'", stage);
  return stage.commit();
}

}  // namespace keras
