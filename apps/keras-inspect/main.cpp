// keras-inspect: what is inside a saved Keras file, the tool to reach for when the names in a
// file do not match a model. Reads .keras, full-model .h5 (Keras 2 or 3), Keras 3 .weights.h5
// and legacy weights-only .h5 without building a model (keras/saving/inspect.h).
//
//   keras-inspect FILE          a human-readable report: file kind, keras_version, backend; the
//                               layers (name, class, trainable, HDF5 group); every weight (HDF5
//                               path, layer, stored name, shape, dtype); the optimizer (class,
//                               config, variables); the compile/training config
//   keras-inspect FILE --json   the same as one JSON document on stdout
//   keras-inspect --to-onnx IN OUT [--opset N] [--batch N]
//                               converts a .keras / full-model .h5 (made by Python Keras or by
//                               this framework) to an ONNX file for deployment without Python
//                               (keras/export/export.h): dynamic batch unless --batch fixes it
//   keras-inspect --help
//
// Exit status: 0 on success; 1 when the file cannot be read (missing, truncated, corrupt, not a
// Keras file: the framework's error message goes to stderr) or, for --to-onnx, the model cannot
// be exported (the error names the layers); 2 for bad arguments.
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

#include "keras/export/export.h"
#include "keras/models/model.h"
#include "keras/saving/inspect.h"
#include "keras/saving/saving.h"

namespace {

const char* kUsage =
    "usage: keras-inspect FILE [--json]\n"
    "       keras-inspect --to-onnx IN OUT [--opset N] [--batch N]\n"
    "\n"
    "Describes a saved Keras file without building the model: file kind, keras_version,\n"
    "backend, layers (name, class), every weight (HDF5 path, layer, name, shape, dtype),\n"
    "the optimizer (class, config, variables) and the compile config.\n"
    "FILE: .keras, full-model .h5 (Keras 2 or 3), .weights.h5, or a legacy weights .h5.\n"
    "\n"
    "  --json   print one JSON document instead of tables (schema: apps/keras-inspect/main.cpp)\n"
    "  --help   print this help\n"
    "\n"
    "  --to-onnx IN OUT  load the model in IN (.keras or full-model .h5) and export it to the\n"
    "                    ONNX file OUT (inference only; input and output names from the model)\n"
    "  --opset N         ONNX opset, 17 (default) to 21\n"
    "  --batch N         a fixed batch size instead of a dynamic batch axis\n";

// keras-inspect --to-onnx IN OUT [--opset N] [--batch N]
int to_onnx(int argc, char** argv) {
  std::string in, out;
  keras::ExportOptions options;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--opset" || arg == "--batch") && i + 1 < argc) {
      const std::string value = argv[++i];
      try {
        const int n = std::stoi(value);
        if (arg == "--opset") options.opset = n;
        else {
          options.dynamic_batch = false;
          options.batch_size = n;
        }
      } catch (const std::exception&) {
        std::cerr << "keras-inspect: " << arg << " expects an integer, got '" << value << "'\n";
        return 2;
      }
    } else if (arg.rfind("--", 0) != 0 && in.empty()) {
      in = arg;
    } else if (arg.rfind("--", 0) != 0 && out.empty()) {
      out = arg;
    } else {
      std::cerr << "keras-inspect: unexpected argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (in.empty() || out.empty()) {
    std::cerr << "keras-inspect: --to-onnx expects IN and OUT\n" << kUsage;
    return 2;
  }
  try {
    const auto model = keras::load_model(in, {.compile = false});
    keras::export_model(*model, out, options);
    std::cout << "keras-inspect: wrote " << out << " (opset " << options.opset << ", batch "
              << (options.dynamic_batch ? std::string("dynamic") : std::to_string(options.batch_size)) << ", inputs:";
    for (const auto& t : model->inputs()) std::cout << " " << t.layer->name();
    std::cout << ", outputs:";
    for (const auto& t : model->outputs()) std::cout << " " << t.layer->name();
    std::cout << ")\n";
  } catch (const std::exception& e) {
    std::cerr << "keras-inspect: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--to-onnx") return to_onnx(argc, argv);
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
