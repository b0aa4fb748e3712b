// A description of a saved Keras file without building a model: what a user needs when the
// names in a file do not match their model. Reads `.keras` zips, full-model `.h5` (written by
// Keras 2 or 3), Keras 3 `.weights.h5` trees (also tf_keras's variant) and legacy weights-only
// `.h5`, generically: every HDF5 dataset of the file is listed exactly once, either as a weight
// or as an optimizer variable, with the layer and weight name where the file records them.
//
//   json d = keras::inspect_file("model.keras");
//   for (const auto& w : d["weights"]) std::cout << w["path"] << "\n";
//   std::cout << keras::format_inspection(d);
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace keras {

// The structured description (all keys always present, null where unknown):
// {
//   "file": "<path as given>",
//   "kind": "keras" | "h5" | "weights.h5" | "legacy_weights.h5",
//       keras: zip with config.json + model.weights.h5; h5: full model (model_config attribute);
//       weights.h5: Keras 3 tree (layers/<key>/vars/<i>, optimizer/vars/<i>);
//       legacy_weights.h5: Keras 2 layout (layer_names, one group per layer, weight_names).
//   "keras_version": string|null, "backend": string|null,
//   "date_saved": string|null,                      (metadata.json of a .keras)
//   "model": {"class_name", "name"} | null,          (full models, from the config)
//   "layers": [{"name", "class_name": string|null, "path": "outer/inner" (names joined by '/'),
//               "depth": 0 for top-level layers, "trainable": bool|null,
//               "hdf5_path": group holding its weights | null}],
//       full models: every layer of the config, nested models' layers after their model;
//       weights-only files: the layers the file names (class_name null).
//   "weights": [{"path": absolute HDF5 path (in model.weights.h5 for a .keras),
//                "layer": layer path|null, "name": stored weight name|null (Keras 3 trees
//                store none), "index": position among its layer's (or the optimizer's)
//                variables, vars/<i> or the weight_names order | null,
//                "shape": [int...], "dtype": "float32"|"float16"|"bfloat16"|"int64"|...}],
//       in the file's own order (layer_names/weight_names, else numeric-aware name order).
//   "optimizer": null | {"class_name": string|null, "name": string|null,
//                        "config": object|null, "variables": [entries as in "weights"]},
//   "compile_config": object|null   (.keras compile_config, or .h5 training_config)
// }
// Throws IOError naming the file (and the entry) for a missing, truncated or corrupt file and
// for a file of no known kind; ValueError for config JSON that does not parse.
nlohmann::json inspect_file(const std::string& path);

// A human-readable report of inspect_file's description: header, layers table, weights table,
// optimizer and compile config. Tolerates missing keys (prints what is there).
std::string format_inspection(const nlohmann::json& description);

}  // namespace keras
