// keras-inspect: what is inside a saved Keras file, the tool to reach for when the names in a
// file do not match a model. Reads .keras, full-model .h5 (Keras 2 or 3), Keras 3 .weights.h5
// and legacy weights-only .h5 without building a model (keras/saving/inspect.h).
//
//   keras-inspect FILE          a human-readable report: file kind, keras_version, backend; the
//                               layers (name, class, trainable, HDF5 group); every weight (HDF5
//                               path, layer, stored name, shape, dtype); the optimizer (class,
//                               config, variables); the compile/training config
//   keras-inspect FILE --json   the same as one JSON document on stdout
//   keras-inspect --help
//
// Exit status: 0 on success; 1 when the file cannot be read (missing, truncated, corrupt, not a
// Keras file: the framework's error message goes to stderr); 2 for bad arguments.
//
// JSON schema (every key present, null where the file does not record it):
//   {"file": str, "kind": "keras" | "h5" | "weights.h5" | "legacy_weights.h5",
//    "keras_version": str|null, "backend": str|null, "date_saved": str|null,
//    "model": {"class_name": str|null, "name": str|null} | null          (full models only),
//    "layers": [{"name": str, "class_name": str|null, "path": "outer/inner", "depth": int,
//                "trainable": bool|null, "hdf5_path": str|null}],
//    "weights": [{"path": HDF5 path (inside model.weights.h5 for .keras), "layer": str|null,
//                 "name": stored weight name|null, "index": int|null (vars/<i>, or the weight_names position),
//                 "shape": [int], "dtype": "float32" | "float16" | "bfloat16" | "int64" | ...}],
//    "optimizer": {"class_name": str|null, "name": str|null, "config": object|null,
//                  "variables": [same entries as "weights"]} | null,
//    "compile_config": object|null   (.keras compile_config or .h5 training_config, verbatim)}
// Every HDF5 dataset of the file appears exactly once, in "weights" or in optimizer.variables.
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "keras/saving/inspect.h"

namespace {

const char* kUsage =
    "usage: keras-inspect FILE [--json]\n"
    "\n"
    "Describes a saved Keras file without building the model: file kind, keras_version,\n"
    "backend, layers (name, class), every weight (HDF5 path, layer, name, shape, dtype),\n"
    "the optimizer (class, config, variables) and the compile config.\n"
    "FILE: .keras, full-model .h5 (Keras 2 or 3), .weights.h5, or a legacy weights .h5.\n"
    "\n"
    "  --json   print one JSON document instead of tables (schema: apps/keras-inspect/main.cpp)\n"
    "  --help   print this help\n";

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--json") {
      as_json = true;
    } else if (arg.rfind("--", 0) == 0 || !file.empty()) {
      std::cerr << "keras-inspect: unexpected argument '" << arg << "'\n" << kUsage;
      return 2;
    } else {
      file = arg;
    }
  }
  if (file.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  try {
    const nlohmann::json description = keras::inspect_file(file);
    if (as_json) {
      std::cout << description.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << keras::format_inspection(description);
    }
  } catch (const std::exception& e) {
    std::cerr << "keras-inspect: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
