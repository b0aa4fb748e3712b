// The compile arguments of a model as Keras saves them: `compile_config` in a `.keras` file's
// config.json (Keras 3) and `training_config` in a legacy `.h5` (Keras 2 schema, which both
// Keras generations read). Names given as strings stay strings ("adam", "mse", "accuracy");
// objects are written with their configs, so a loaded model compiles to the same state.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "keras/models/model.h"

namespace keras::saving {

using json = nlohmann::json;

// {"optimizer": <Keras 3 object>, "loss", "loss_weights", "metrics", "weighted_metrics",
//  "run_eagerly", "steps_per_execution", "jit_compile"}; null when `model` is not compiled.
json compile_config(const Model& model);

// {"loss", "metrics", "weighted_metrics", "loss_weights", "optimizer_config": {"class_name",
// "config"}} with every object in Keras 2 form; null when `model` is not compiled.
json training_config(const Model& model);

// CompileOptions for `model` from a compile_config or a training_config (Keras 2 or 3; Keras 2's
// MeanMetricWrapper objects, per-output nested lists and dicts keyed by output name included).
// The optimizer is a fresh object from its config. Throws ValueError naming `where` and the
// entry for a malformed config or an unknown loss, metric or optimizer.
CompileOptions compile_options_from_config(const json& config, const Model& model, const std::string& where);

}  // namespace keras::saving
