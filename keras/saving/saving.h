// Saving and loading whole models in Keras's own files (keras-formats.md sections 1-3):
//   .keras  zip of metadata.json, config.json (Keras 3 schema + compile_config) and
//           model.weights.h5 (the Keras 3 weights tree, optimizer state included);
//   .h5     legacy HDF5 (model_config and training_config in the Keras 2 schema, which both Keras
//           generations read; model_weights; optimizer_weights).
// Saves build the whole file in memory and write it through a temporary file that is renamed
// over the target, so a failure never leaves a broken file where a good one was. Loads build a
// fresh model and only return it when everything was read, so nothing is half-loaded.
#pragma once
#include <memory>
#include <string>

#include "keras/models/model.h"
#include "keras/saving/model_config.h"  // to_json, model_from_json, model_from_config
#include "keras/saving/weights_io.h"

namespace keras {

struct SaveOptions {
  bool include_optimizer = true;  // optimizer state and compile config, when compiled
};

// Writes `model` by the suffix of `path` (".keras" or ".h5"); ValueError for any other suffix,
// NotImplementedError for a model that cannot be serialized (subclassed, OpLayer), IOError when
// the file cannot be written.
void save_model(const Model& model, const std::string& path, const SaveOptions& options = {});

struct LoadModelOptions {
  bool compile = true;  // recompile from the saved compile config and restore the optimizer
};

// A model read from a ".keras" zip or an ".h5" file written by Keras 2, Keras 3 or this
// framework. Throws IOError naming the file and the entry for a missing, truncated or corrupt
// file, ValueError for a config of the wrong schema, TypeError for an unknown class (listing the
// registered ones), ShapeError for a weight of the wrong shape.
std::shared_ptr<Model> load_model(const std::string& path, const LoadModelOptions& options = {});

// Weights only: ".weights.h5" (Keras 3 tree, optimizer state included when compiled and built)
// or another ".h5" (legacy Keras 2 layout). ValueError for other suffixes.
void save_weights(const Model& model, const std::string& path);
// Loads weights from ".weights.h5", a legacy weights ".h5" or a full-model ".h5"/".keras", by
// structure (default), by name, with skip_mismatch or an explicit name map (weights_io.h).
// All-or-nothing: on any error the model is unchanged. Returns what was loaded, skipped, missing.
LoadReport load_weights(Model& model, const std::string& path, const LoadWeightsOptions& options = {});

}  // namespace keras
