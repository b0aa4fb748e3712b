// Recurrent layers in Keras's files: a model of LSTM, Bidirectional(GRU), RNN over stacked cells,
// TimeDistributed(Dense) and RNN(GRUCell) saved by real Keras 3 (.keras, .weights.h5, legacy
// .h5) and tf_keras (.h5) loads and predicts Keras's outputs; our own files of it load back
// alike. Keras 3 keeps the cells' weights under attribute keys (layers/lstm/cell/vars,
// layers/bi/forward_layer/cell/vars, layers/stacked/cell/cells/lstm_cell/vars, layers/td/layer/vars)
// and legacy files name them by path (lstm/lstm_cell/kernel); both are checked here.
// make_rnn_layers_reference.py writes the fixtures. With KERAS_FIXTURES_EXPORT=<dir>, the files
// we write are left in <dir> for `make_fixtures.py verify <dir>`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "keras/data/readers.h"
#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/saving.h"
#include "layers/bidirectional.h"
#include "layers/dense.h"
#include "layers/gru.h"
#include "layers/gru_cell.h"
#include "layers/input_layer.h"
#include "layers/lstm.h"
#include "layers/lstm_cell.h"
#include "layers/rnn.h"
#include "layers/simple_rnn_cell.h"
#include "layers/time_distributed.h"
#include "support/rnn_reference.h"

using namespace keras;
using keras::testing::expect_close;
namespace L = keras::layers;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/";

Tensor input() { return data::load_npy(kDir + "rnn_model.input0.npy"); }

// The fixture's architecture, written in C++ with Keras's layer names.
std::shared_ptr<Model> rnn_model() {
  auto in = L::Input({5, 4}, {.name = "seq"});
  auto x = L::LSTM({.units = 4, .return_sequences = true, .name = "lstm"})(in);
  x = L::Bidirectional({.layer = L::GRU({.units = 2, .return_sequences = true}), .name = "bi"})(x);
  x = L::RNN({.cells = {L::SimpleRNNCell({.units = 3}), L::LSTMCell({.units = 2})}, .return_sequences = true,
              .name = "stacked"})(x);
  x = L::TimeDistributed({.layer = L::Dense({.units = 2}), .name = "td"})(x);
  auto out = L::RNN({.cell = L::GRUCell({.units = 2}), .name = "last"})(x);
  return std::make_shared<Model>(in, out, "rnn_model");
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("keras_rnn_saving_" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

}  // namespace

TEST(RNNSaving, KerasFilesLoadAndPredictKerasOutputs) {
  const Tensor k3 = data::load_npy(kDir + "rnn_model.k3.output0.npy");
  for (const char* file : {"rnn_model.keras", "rnn_model.k3.h5"}) {
    SCOPED_TRACE(file);
    auto model = load_model(kDir + file);
    expect_close(model->predict(input()), k3, file);
  }
  auto k2 = load_model(kDir + "rnn_model.k2.h5");
  expect_close(k2->predict(input()), data::load_npy(kDir + "rnn_model.k2.output0.npy"), "tf_keras .h5");
}

TEST(RNNSaving, KerasWeightsFileLoadsIntoTheCppModel) {
  auto model = rnn_model();
  LoadReport report = load_weights(*model, kDir + "rnn_model.weights.h5");
  EXPECT_TRUE(report.skipped.empty());
  EXPECT_TRUE(report.missing.empty());
  expect_close(model->predict(input()), data::load_npy(kDir + "rnn_model.k3.output0.npy"), "weights.h5");
  // The legacy layout of a Keras 3 .h5 into the same model.
  auto legacy = rnn_model();
  load_weights(*legacy, kDir + "rnn_model.k3.h5");
  expect_close(legacy->predict(input()), data::load_npy(kDir + "rnn_model.k3.output0.npy"), "legacy .h5 weights");
}

TEST(RNNSaving, WeightsTreeUsesKerasAttributeKeys) {
  TempDir dir;
  auto model = load_model(kDir + "rnn_model.keras");
  save_weights(*model, dir / "ours.weights.h5");
  auto file = hdf5::File::open(dir / "ours.weights.h5");
  for (const char* group : {"layers/lstm/cell/vars", "layers/bidirectional/forward_layer/cell/vars",
                            "layers/bidirectional/backward_layer/cell/vars", "layers/rnn/cell/cells/simple_rnn_cell/vars",
                            "layers/rnn/cell/cells/lstm_cell/vars", "layers/time_distributed/layer/vars",
                            "layers/rnn_1/cell/vars"})
    EXPECT_TRUE(file.root().has_group(group)) << group;
  EXPECT_EQ(file.root().open_group("layers/lstm/cell/vars").children().size(), 3u);
}

TEST(RNNSaving, OurFilesLoadBackAndPredictTheSame) {
  TempDir dir;
  const char* env = std::getenv("KERAS_FIXTURES_EXPORT");
  auto model = load_model(kDir + "rnn_model.keras");
  const Tensor expected = model->predict(input());
  const std::string stem = env ? std::string(env) + "/rnn_model" : dir / "rnn_model";
  save_model(*model, stem + ".keras");
  save_model(*model, stem + ".h5");
  save_weights(*model, stem + ".weights.h5");
  save_weights(*model, stem + ".weights_only.h5");
  for (const char* suffix : {".keras", ".h5"}) expect_close(load_model(stem + suffix)->predict(input()), expected, suffix);
  for (const char* suffix : {".weights.h5", ".weights_only.h5"}) {
    auto fresh = rnn_model();
    load_weights(*fresh, stem + suffix);
    expect_close(fresh->predict(input()), expected, suffix);
  }
}
