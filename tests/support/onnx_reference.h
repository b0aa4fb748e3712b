// ONNX export checks against the reference tools: each case exports a model, records
// model.predict at batch 1 and 7 (one file with a dynamic batch serves both), and one Python run
// (tests/keras/export/onnx_check.py, in the test venv) checks every file with onnx.checker and
// compares ONNX Runtime's outputs. Without onnx / onnxruntime the caller skips with the reason.
//
//   test_support::OnnxCases cases("layers");
//   cases.add("dense", model);
//   cases.expect_all_match(1e-5);  // GTEST_SKIP()s inside when the references are missing
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/ops.h"
#include "backend/random.h"
#include "keras/data/readers.h"
#include "keras/export/export.h"
#include "keras/models/model.h"
#include "support/python.h"

namespace test_support {

// Random inputs of the model for batch `batch`: standard normal floats, integer ids in [0, 5).
inline keras::TensorList model_inputs(const keras::Model& model, int64_t batch, uint64_t seed) {
  keras::TensorList xs;
  for (size_t i = 0; i < model.inputs().size(); ++i) {
    const auto& t = model.inputs()[i];
    keras::Shape s = t.shape;
    s[0] = batch;
    for (int64_t d : s) EXPECT_GT(d, 0) << "model input " << i << " needs known extents: " << keras::shape_str(t.shape);
    if (keras::is_floating(t.dtype)) xs.push_back(keras::random::normal(s, 0.0, 1.0, seed + 31 * i));
    else xs.push_back(keras::ops::cast(keras::random::uniform(s, 0.0, 4.999, seed + 31 * i), t.dtype));
  }
  return xs;
}

// Every float weight of `model` drawn from N(0, stddev), one seed per weight from `seed` on: weights
// away from their initialisers (zero biases, identity-like kernels), so that an export that drops a
// weight or misorders a block shows in the predictions.
inline void random_weights(keras::Model& model, uint64_t seed, double stddev = 0.5) {
  for (auto& v : model.weights())
    if (keras::is_floating(v.dtype())) v.assign(keras::random::normal(v.shape(), 0.0, stddev, seed++));
}

class OnnxCases {
 public:
  explicit OnnxCases(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() / ("keras_onnx_" + tag + "_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~OnnxCases() { std::filesystem::remove_all(dir_); }

  const std::filesystem::path& dir() const { return dir_; }

  // Exports `model` as `name`.onnx and records its predictions on `batches` (default: random
  // inputs at batch 1 and 7).
  void add(const std::string& name, keras::Model& model, const keras::ExportOptions& options = {},
           std::vector<keras::TensorList> batches = {}) {
    SCOPED_TRACE(name);
    const std::string path = (dir_ / (name + ".onnx")).string();
    try {
      keras::export_model(model, path, options);
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": export failed: " << e.what();
      return;
    }
    if (batches.empty()) batches = {model_inputs(model, 1, 11), model_inputs(model, 7, 12)};
    nlohmann::json runs = nlohmann::json::array();
    for (size_t b = 0; b < batches.size(); ++b) {
      keras::TensorList ys = model.predict(batches[b], {.batch_size = 64});
      nlohmann::json run{{"inputs", nlohmann::json::object()}, {"outputs", nlohmann::json::array()}};
      for (size_t i = 0; i < batches[b].size(); ++i) {
        const std::string f = (dir_ / (name + ".b" + std::to_string(b) + ".in" + std::to_string(i) + ".npy")).string();
        keras::data::save_npy(f, batches[b][i]);
        run["inputs"][model.inputs()[i].layer->name()] = f;
      }
      for (size_t o = 0; o < ys.size(); ++o) {
        const std::string f = (dir_ / (name + ".b" + std::to_string(b) + ".out" + std::to_string(o) + ".npy")).string();
        keras::data::save_npy(f, ys[o]);
        run["outputs"].push_back(f);
      }
      runs.push_back(run);
    }
    cases_.push_back({{"name", name}, {"model", path}, {"runs", runs}});
  }

  // A case whose runs the caller recorded: `runs` as onnx_check.py reads them (inputs and
  // outputs by name, "carry" for inputs fed from the run before), files from save().
  void add_runs(const std::string& name, const std::string& model_path, nlohmann::json runs) {
    cases_.push_back({{"name", name}, {"model", model_path}, {"runs", std::move(runs)}});
  }
  // Writes `t` as `file`.npy in the cases' folder; returns its path.
  std::string save(const std::string& file, const keras::Tensor& t) const {
    const std::string path = (dir_ / (file + ".npy")).string();
    keras::data::save_npy(path, t);
    return path;
  }

  // Runs the reference check; results by case name. `skip` is set when it cannot run.
  std::map<std::string, nlohmann::json> check(std::string& skip) const {
    const std::string manifest = (dir_ / "manifest.json").string();
    std::ofstream(manifest) << cases_.dump();
    const std::string out = run_python_file(std::string(KERAS_SOURCE_DIR) + "/tests/keras/export/onnx_check.py",
                                            {manifest}, skip);
    std::map<std::string, nlohmann::json> results;
    if (!skip.empty() || out.empty()) return results;
    const nlohmann::json parsed = nlohmann::json::parse(out);
    for (const auto& [k, v] : parsed.items()) results[k] = v;
    return results;
  }

  // Every case passes onnx.checker and matches predict within `tolerance` (relative to the
  // output's largest magnitude). Returns the results (inputs, outputs, doc, metadata) by name.
  std::map<std::string, nlohmann::json> expect_all_match(double tolerance, std::string& skip) const {
    const auto results = check(skip);
    if (!skip.empty()) return results;
    for (const auto& c : cases_) {
      const std::string name = c["name"];
      auto it = results.find(name);
      if (it == results.end()) {
        ADD_FAILURE() << name << ": no result";
        continue;
      }
      if (it->second.contains("error")) {
        ADD_FAILURE() << name << ": " << it->second["error"].get<std::string>();
        continue;
      }
      const double err = it->second["max_rel_err"].get<double>();
      std::cout << "  onnx " << name << ": max relative error " << err << " over " << it->second["runs"] << " batches\n";
      EXPECT_LE(err, tolerance) << name;
    }
    return results;
  }

  size_t size() const { return cases_.size(); }

 private:
  std::filesystem::path dir_;
  nlohmann::json cases_ = nlohmann::json::array();
};

}  // namespace test_support

// Skips a test that writes ONNX files in a library built without the ONNX schema.
#define SKIP_WITHOUT_ONNX_WRITER()                                                          \
  do {                                                                                      \
    if (!keras::onnx_export_available())                                                    \
      GTEST_SKIP() << "the library was built without libonnx-dev (KERAS_ONNX): no ONNX writer"; \
  } while (0)

// Runs the check and skips the test with the reason when the references are missing.
#define EXPECT_ONNX_CASES_MATCH(cases, tolerance)        \
  do {                                                   \
    std::string onnx_skip_;                              \
    (cases).expect_all_match((tolerance), onnx_skip_);   \
    if (!onnx_skip_.empty()) GTEST_SKIP() << onnx_skip_; \
  } while (0)
