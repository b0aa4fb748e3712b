#include "keras/saving/weights_io.h"

#include <set>
#include <unordered_set>

#include "keras/saving/detail/weights_stage.h"
#include "keras/models/model.h"
#include "layers/op_layer.h"

namespace keras {

std::string LoadReport::str() const {
  std::string out = "loaded " + std::to_string(loaded.size()) + " weight(s), skipped " +
                    std::to_string(skipped.size()) + " entr" + (skipped.size() == 1 ? "y" : "ies") + ", " +
                    std::to_string(missing.size()) + " weight(s) left unchanged";
  for (const auto& [entry, reason] : skipped) out += "\n  skipped " + entry + ": " + reason;
  for (const auto& m : missing) out += "\n  unchanged " + m;
  return out;
}

namespace detail {

std::vector<Variable> own_variables(const Layer& layer) {
  std::unordered_set<const void*> nested;
  for (const auto& sub : layer.sublayers())
    for (const auto& v : sub->weights()) nested.insert(v.id());
  std::vector<Variable> out;
  for (const auto& v : layer.weights())  // own weights come first, then the sublayers'
    if (!nested.count(v.id())) out.push_back(v);
  return out;
}

std::vector<LayerPtr> child_layers(const Layer& layer) {
  const auto* model = dynamic_cast<const Model*>(&layer);
  if (!model) return layer.sublayers();
  // Keras 3 keeps operations (keras ops on KerasTensors, read TFOpLambdas) out of model.layers,
  // so they take no key in the weights tree; they hold no weights.
  std::vector<LayerPtr> out;
  for (const auto& l : model->layers())
    if (!dynamic_cast<const layers::OpLayerImpl*>(l.get())) out.push_back(l);
  return out;
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

std::string variable_names(const std::vector<Variable>& vars) {
  std::string out;
  for (const auto& v : vars) out += (out.empty() ? "" : ", ") + v.name();
  return out;
}

std::vector<Variable> optimizer_targets(std::vector<Variable> vars, size_t saved_count, WeightStage& stage) {
  if (saved_count + 1 == vars.size() && vars.size() >= 2 && vars[1].name() == "learning_rate") {
    stage.missing({vars[1]});
    vars.erase(vars.begin() + 1);
  }
  return vars;
}

void WeightStage::mismatch(const std::string& where, const std::string& entry, const std::string& expected,
                           const std::string& got, const std::vector<Variable>& affected, const std::string& hint) {
  if (!skip_mismatch_)
    fail<IOError>(where, expected, got,
                  hint.empty() ? "The file was saved from a different model; skip_mismatch skips such entries." : hint);
  skip(entry, "expected " + expected + ", got " + got);
  missing(affected);
}

void WeightStage::missing(const std::vector<Variable>& vars) {
  for (const auto& v : vars) report_.missing.push_back(v.path());
}

LoadReport WeightStage::commit() {
  std::set<std::string> loaded;
  for (const auto& [variable, value] : staged_)
    if (loaded.insert(variable.path()).second) report_.loaded.push_back(variable.path());
  // A weight loaded from one entry is not missing because another entry was skipped.
  std::vector<std::string> still_missing;
  std::set<std::string> seen;
  for (const auto& m : report_.missing)
    if (!loaded.count(m) && seen.insert(m).second) still_missing.push_back(m);
  report_.missing = std::move(still_missing);
  if (strict_ && (strict_skips_ > 0 || !report_.missing.empty())) {
    LoadReport refused = report_;
    refused.loaded.clear();
    fail<IOError>("'" + file_ + "'", "every weight of the model and every entry of the file matched (strict)",
                  "skipped entries: " + std::to_string(strict_skips_) + ", unmatched weights: " +
                      std::to_string(report_.missing.size()) + "; nothing was loaded:\n" + refused.str(),
                  "Load with strict = false to take what fits.");
  }
  for (auto& [variable, value] : staged_) {
    Variable target = variable;
    target.assign(value);
  }
  staged_.clear();
  return report_;
}

}  // namespace detail
}  // namespace keras
