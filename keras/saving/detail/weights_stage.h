// Internals shared by the weight readers and writers (weights_h5.cpp, legacy_weights.cpp).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "backend/tensor.h"
#include "backend/variable.h"
#include "keras/saving/weights_io.h"
#include "layers/layer.h"

namespace keras::detail {

// A layer's own variables (not its sublayers'), in creation order.
std::vector<Variable> own_variables(const Layer& layer);
// A model's layers() (Sequential without its InputLayer, Functional with them) less its OpLayers
// (Keras operations are not in Keras's model.layers), else sublayers().
std::vector<LayerPtr> child_layers(const Layer& layer);
// "a" + "/" + "b", where either may be empty.
std::string join_path(const std::string& a, const std::string& b);
// "kernel, bias": variable names for messages.
std::string variable_names(const std::vector<Variable>& vars);

// Collects values for variables without touching them, so that a reader can check a whole file
// before changing anything: nothing is assigned unless commit() is reached (all-or-nothing).
class WeightStage {
 public:
  // `strict` (LoadWeightsOptions::strict): commit() refuses a load that skips an entry or leaves
  // a weight unchanged, naming `file` in the IOError.
  explicit WeightStage(bool skip_mismatch, bool strict = false, std::string file = "")
      : skip_mismatch_(skip_mismatch), strict_(strict), file_(std::move(file)) {}
  void add(const Variable& variable, Tensor value) { staged_.emplace_back(variable, std::move(value)); }
  // A mismatch in `entry`: IOError "<where>: expected <expected>, got <got>" unless skipping;
  // then `entry` is reported skipped and `affected` missing.
  // `hint` replaces the default one when given.
  void mismatch(const std::string& where, const std::string& entry, const std::string& expected,
                const std::string& got, const std::vector<Variable>& affected, const std::string& hint = "");
  // `strict_counts` false: reported, but no reason for a strict load to refuse (optimizer state
  // that the load was not asked to restore).
  void skip(const std::string& entry, const std::string& reason, bool strict_counts = true) {
    report_.skipped.emplace_back(entry, reason);
    if (strict_counts) ++strict_skips_;
  }
  void missing(const std::vector<Variable>& vars);
  bool skip_mismatch() const { return skip_mismatch_; }
  // Assigns every staged value (dtype converted, copied to the variable's device); when strict,
  // first checks that nothing was skipped or left missing (IOError otherwise, nothing assigned).
  LoadReport commit();

 private:
  bool skip_mismatch_;
  bool strict_;
  std::string file_;
  size_t strict_skips_ = 0;
  std::vector<std::pair<Variable, Tensor>> staged_;
  LoadReport report_;
};

// The optimizer variables a saved state of `saved_count` entries restores, by position: all of
// them, or all but the learning rate when the file holds exactly one entry fewer and the
// optimizer keeps a float rate at index 1 (Keras 2 optimizers keep their rate out of their
// variables); the rate is then reported missing.
std::vector<Variable> optimizer_targets(std::vector<Variable> vars, size_t saved_count, WeightStage& stage);

}  // namespace keras::detail
