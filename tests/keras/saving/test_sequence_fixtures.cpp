// Sequence models made by real Keras 3 and tf_keras (tests/data/keras/sequence, written by
// make_sequence_fixtures.py; see its docstring and manifest.json): every file loads here (.keras,
// Keras 3 legacy .h5, tf_keras .h5, Keras 3 JSON + .weights.h5) and predicts what the Keras that
// wrote it predicted; our saves reload here and load in Keras, predicting the same.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "keras/saving/detail/call_nodes.h"
#include "keras/saving/model_config.h"
#include "layers/keras_signature.h"
#include "layers/layer_registry.h"
#include "tests/support/python.h"

using namespace keras;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/sequence/";

struct SequenceFixture {
  std::string name;
  std::vector<std::string> classes;  // the layer classes its files hold (documentation)
};

std::ostream& operator<<(std::ostream& os, const SequenceFixture& f) { return os << f.name; }

const std::vector<SequenceFixture>& fixtures() {
  static const std::vector<SequenceFixture> all = {
      {"text_classifier", {"Embedding", "LSTM", "Dense"}},
      {"bilstm_states", {"Bidirectional", "LSTM", "Dense"}},
      {"gru_both", {"GRU", "Dense"}},
      {"seq2seq", {"LSTM", "Dense"}},
      {"transformer_block",
       {"Embedding", "MultiHeadAttention", "Add", "LayerNormalization", "Dense", "GlobalAveragePooling1D"}},
      {"gru_forecaster", {"GRU", "Dense"}},
      {"masked_series", {"Masking", "LSTM", "Dense", "Add", "GlobalAveragePooling1D"}},
      {"concat_masks", {"Embedding", "Concatenate", "LSTM", "Dense"}},
      {"nested_masked", {"Functional", "Embedding", "LSTM", "Dense"}},
      {"conv_lstm2d_forecaster", {"ConvLSTM2D", "Conv2D"}},
      {"conv_lstm1d", {"ConvLSTM1D", "Dense"}},
      {"conv_lstm3d", {"ConvLSTM3D", "Flatten", "Dense"}},
  };
  return all;
}

TensorList numbered(const std::string& stem, const std::string& kind) {
  TensorList out;
  for (int i = 0; fs::exists(kDir + stem + "." + kind + std::to_string(i) + ".npy"); ++i)
    out.push_back(data::load_npy(kDir + stem + "." + kind + std::to_string(i) + ".npy"));
  return out;
}

void expect_outputs(const TensorList& got, const TensorList& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape()) << what << " output " << k;
    auto a = got[k].contiguous().to_vector<float>(), b = want[k].contiguous().to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-5 + 1e-5 * std::abs(b[i])) << what << " output " << k << " at " << i;
  }
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<std::string> layer_names(const Model& model) {
  std::vector<std::string> out;
  for (const auto& l : model.layers()) out.push_back(l->name());
  return out;
}

class SequenceFixtures : public ::testing::TestWithParam<SequenceFixture> {};

}  // namespace

// What the sequence layers must declare for these files to load (layers/keras_signature.h).
TEST(SequenceFixtureSignatures, RecurrentAndAttentionClassesDeclareTheirCallArguments) {
  for (const char* rnn : {"LSTM", "GRU", "SimpleRNN", "Bidirectional"}) {
    const KerasSignature& s = keras_signature(rnn);
    EXPECT_EQ(s.legacy_list_keyword, "initial_state") << rnn << ": tf_keras folds initial_state into the input list";
    EXPECT_NE(std::find(s.call_keywords.begin(), s.call_keywords.end(), "initial_state"), s.call_keywords.end()) << rnn;
  }
  const KerasSignature& mha = keras_signature("MultiHeadAttention");
  EXPECT_EQ(mha.tensor_parameters, (std::vector<std::string>{"query", "value", "key"}));
  for (const char* k : {"attention_mask", "use_causal_mask", "return_attention_scores"})
    EXPECT_NE(std::find(mha.call_keywords.begin(), mha.call_keywords.end(), k), mha.call_keywords.end()) << k;
}

TEST_P(SequenceFixtures, KerasFilesPredictKerasOutputs) {
  const SequenceFixture& f = GetParam();
  const TensorList xs = numbered(f.name, "input");
  ASSERT_FALSE(xs.empty()) << "run tests/data/keras/make_sequence_fixtures.py";
  for (const auto& [file, gen] : std::vector<std::pair<std::string, std::string>>{
           {".keras", "k3"}, {".k3.h5", "k3"}, {".k2.h5", "k2"}}) {
    SCOPED_TRACE(f.name + file);
    auto model = load_model(kDir + f.name + file, {.compile = false});
    expect_outputs(model->predict_on_batch(xs), numbered(f.name, gen + ".output"), f.name + file);
  }
  auto from_json = model_from_json(read_json(kDir + f.name + ".k3.json").dump());
  from_json->load_weights(kDir + f.name + ".weights.h5");
  expect_outputs(from_json->predict_on_batch(xs), numbered(f.name, "k3.output"), f.name + ".k3.json + .weights.h5");
}

TEST_P(SequenceFixtures, LayersInKerasOrder) {
  const SequenceFixture& f = GetParam();
  // Weight files pair weights with layers in this order. Keras 3's config also lists the
  // operations that computed masks, which are not rebuilt here.
  for (const char* gen : {"k3", "k2"}) {
    json config = read_json(kDir + f.name + "." + gen + ".json")["config"];
    const auto skipped = detail::mask_operations(config);
    std::vector<std::string> keras;
    for (const auto& e : config["layers"])
      if (!skipped.count(e["name"].get<std::string>())) keras.push_back(e["name"]);
    EXPECT_EQ(layer_names(*model_from_config(read_json(kDir + f.name + "." + gen + ".json"))), keras) << gen;
  }
}

// Our Keras 3 config of a model Keras wrote is Keras's: every entry of the layer list (layers, and
// the operations that compute recorded masks: NotEqual, LogicalOr) equal, matched by name (the
// operations' places in the list may differ), and the same inputs and outputs.
TEST_P(SequenceFixtures, OurConfigIsKerasConfig) {
  const SequenceFixture& f = GetParam();
  const json keras = read_json(kDir + f.name + ".k3.json")["config"];
  const json ours = serialize_model(*load_model(kDir + f.name + ".keras", {.compile = false}))["config"];
  std::map<std::string, json> want, got;
  for (const auto& e : keras["layers"]) want[e["name"].get<std::string>()] = e;
  for (const auto& e : ours["layers"]) got[e["name"].get<std::string>()] = e;
  for (const auto& [name, e] : want) {
    ASSERT_TRUE(got.count(name)) << name << " missing from our config";
    EXPECT_EQ(got[name], e) << name << "\nours:  " << got[name].dump() << "\nkeras: " << e.dump();
  }
  EXPECT_EQ(got.size(), want.size());
  EXPECT_EQ(ours["input_layers"], keras["input_layers"]);
  EXPECT_EQ(ours["output_layers"], keras["output_layers"]);
}

TEST_P(SequenceFixtures, OurSavesReloadAndLoadInKeras) {
  const SequenceFixture& f = GetParam();
  const TensorList xs = numbered(f.name, "input");
  auto model = load_model(kDir + f.name + ".keras", {.compile = false});
  const TensorList want = model->predict_on_batch(xs);
  const fs::path dir = fs::temp_directory_path() / ("sequence_fixtures_" + std::to_string(getpid()) + "_" + f.name);
  fs::create_directories(dir);
  const std::string stem = (dir / "ours").string();
  model->save(stem + ".keras");
  model->save(stem + ".h5");
  model->save_weights(stem + ".weights.h5");
  for (size_t i = 0; i < want.size(); ++i) data::save_npy(stem + ".output" + std::to_string(i) + ".npy", want[i]);
  expect_outputs(load_model(stem + ".keras")->predict_on_batch(xs), want, "ours.keras");
  expect_outputs(load_model(stem + ".h5")->predict_on_batch(xs), want, "ours.h5");
  auto fresh = model_from_config(serialize_model(*model));
  fresh->load_weights(stem + ".weights.h5");
  expect_outputs(fresh->predict_on_batch(xs), want, "ours.weights.h5");

  // Keras 3 loads our .keras, tf_keras our .h5 (Keras 3 cannot read the Keras 2 schema's RNN
  // configs, as it cannot read tf_keras's own: manifest.json keras_facts).
  const std::string code = R"PY(
import json, os, sys
import numpy as np
import keras, tf_keras
stem, data, name = sys.argv[1], sys.argv[2], sys.argv[3]
def numbered(prefix):
    out, i = [], 0
    while os.path.exists("%s%d.npy" % (prefix, i)):
        out.append(np.load("%s%d.npy" % (prefix, i))); i += 1
    return out
xs, want = numbered(os.path.join(data, name + ".input")), numbered(stem + ".output")
result = {}
for label, load in [("keras3 ours.keras", lambda: keras.saving.load_model(stem + ".keras")),
                    ("tf_keras ours.h5", lambda: tf_keras.models.load_model(stem + ".h5"))]:
    try:
        got = load().predict(xs if len(xs) > 1 else xs[0], verbose=0)
        got = got if isinstance(got, list) else [got]
        result[label] = max(float(np.max(np.abs(np.asarray(g) - w) / (1 + np.abs(w)))) for g, w in zip(got, want)) \
            if len(got) == len(want) and all(np.shape(g) == w.shape for g, w in zip(got, want)) else "outputs differ in shape"
    except Exception as e:
        result[label] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
print(json.dumps(result))
)PY";
  std::string skip;
  const std::string out = test_support::run_python(code, {stem, kDir, f.name}, {"keras", "tf_keras"}, skip);
  fs::remove_all(dir);
  if (!skip.empty()) GTEST_SKIP() << skip << " (set KERAS_TEST_PYTHON=/work/keras-ref/bin/python)";
  ASSERT_NE(out.rfind('{'), std::string::npos) << out;
  json result = json::parse(out.substr(out.rfind('{')));
  ASSERT_EQ(result.size(), 2u) << out;
  for (const auto& [label, value] : result.items()) {
    ASSERT_TRUE(value.is_number()) << label << ": " << value;
    EXPECT_LE(value.get<double>(), 1e-5) << label;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SequenceFixtures, ::testing::ValuesIn(fixtures()),
                         [](const auto& info) { return info.param.name; });
