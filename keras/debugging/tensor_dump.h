// Tensor dumps (tfdbg's dump role): while a TensorDump is alive, the outputs of the chosen layers
// (and, when asked, the gradients of the loss with respect to them) are written for the chosen
// steps as NumPy .npy files, with an index, index.json, that names each one:
//
//   {"format": "keras-tensor-dump", "version": 1, "tensors": [
//     {"name": "sequential/dense_1/output:0", "layer": "sequential/dense_1", "class_name": "Dense",
//      "kind": "output", "index": 0, "call": 0, "mode": "train", "epoch": 0, "step": 3,
//      "shape": [32, 64], "dtype": "float32", "file": "train_e0_s3/sequential.dense_1.output_0.npy"}, ...]}
//
// `kind` is "output" or "gradient" (d(loss)/d(output), written when the backward walk reaches the
// layer's output), `index` the layer output, `call` counts calls of the same layer within one step
// (a shared layer, a recurrent cell). Tensors are keyed by (name, mode, epoch, step) across dumps:
// `tensor-dump compare A B` (apps/tensor-dump) matches them by that key.
//
//   auto dump = keras::debugging::dump({.dump_root = "dumps/run1", .layers = {"conv*"},
//                                       .gradients = true, .steps = {0, 10}});
//   model.fit(x, y, {.epochs = 1});
//   dump.close();   // or let it go out of scope
//
// or as a callback for one fit: `.callbacks = {keras::debugging::DumpTensors({...})}`.
// The step is Model's loop step (keras/debugging: StepInfo); a custom training loop names its
// steps with keras::instrumentation::set_step. Layers are those called eagerly through
// Layer::operator() (every layer of a functional or Sequential model, nested models included).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "keras/models/callback.h"

namespace keras::debugging {

struct DumpOptions {
  std::string dump_root;            // folder to write to (created); an earlier index there is replaced
  // Layers by name ("dense_1") or path ("sequential/dense_1"), each an fnmatch glob ("block_3/*",
  // "conv*"); a pattern without '/' matches the layer's own name. Empty: every layer.
  std::vector<std::string> layers;
  bool outputs = true;              // the layers' outputs
  bool gradients = false;           // d(loss)/d(output) of the chosen layers, in training steps
  std::vector<int64_t> steps;       // loop steps (batch index in the epoch) to dump; empty: all
  std::vector<int> epochs;          // empty: all
  // "train", "test", "predict", or "" for calls outside Model's loops; empty: all.
  std::vector<std::string> modes;
  int64_t max_tensors = 100000;     // stop writing (and say so in the index) beyond this many
};

// Writes as described above from construction to close(). ValueError for an empty dump_root;
// IOError when the folder can't be made or a file can't be written (raised from the layer call
// or backward walk that produced the tensor). Not copyable.
class TensorDump {
 public:
  explicit TensorDump(DumpOptions options);
  ~TensorDump();
  TensorDump(const TensorDump&) = delete;
  TensorDump& operator=(const TensorDump&) = delete;
  // Stops watching and writes the index; idempotent.
  void close();
  // Tensors written so far.
  int64_t size() const;
  std::string index_path() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// The scope form: `auto d = keras::debugging::dump({...});`.
TensorDump dump(DumpOptions options);

// A Callback holding a TensorDump from on_train_begin to on_train_end (and from on_test_begin /
// on_predict_begin to their ends when fit is not running).
class DumpTensorsCallback : public Callback {
 public:
  explicit DumpTensorsCallback(DumpOptions options) : options_(std::move(options)) {}
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  void begin(const char* owner);
  void end(const char* owner);
  DumpOptions options_;
  std::unique_ptr<TensorDump> dump_;
  std::string owner_;  // the hook pair that opened dump_
};

std::shared_ptr<DumpTensorsCallback> DumpTensors(DumpOptions options);

}  // namespace keras::debugging
