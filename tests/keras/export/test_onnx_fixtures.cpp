// ONNX export of the models real Keras wrote (tests/data/keras): every fixture the framework
// loads either exports, passes onnx.checker and predicts as model.predict in ONNX Runtime at
// batch 1 and 7 (one dynamic-batch file, the fixture's own inputs, padded where the model is
// masked), or, when it holds a layer without an ONNX mapping, fails naming that layer and its
// class and writes nothing. The lists below say which is which.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "keras/keras.h"
#include "support/onnx_reference.h"

namespace k = keras;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/";

// `n` rows of `t` taken cyclically (batch 1: the first row; batch 7: the rows repeated).
k::Tensor rows(const k::Tensor& t, int64_t n) {
  const k::Tensor f = t.astype(k::DType::float32).contiguous();
  const std::vector<float> v = f.to_vector<float>();
  const int64_t row = f.numel() / f.dim(0);
  std::vector<float> out;
  for (int64_t r = 0; r < n; ++r) {
    const auto at = v.begin() + static_cast<std::ptrdiff_t>((r % f.dim(0)) * row);
    out.insert(out.end(), at, at + row);
  }
  k::Shape s = f.shape();
  s[0] = n;
  return k::Tensor::from_vector(out, s).astype(t.dtype());
}

// The fixture's inputs "<stem>.input<i>.npy" beside `file`, at batch 1 and 7.
std::vector<k::TensorList> fixture_batches(const fs::path& file, const std::string& stem, size_t inputs) {
  std::vector<k::TensorList> batches(2);
  for (size_t i = 0; i < inputs; ++i) {
    const fs::path npy = file.parent_path() / (stem + ".input" + std::to_string(i) + ".npy");
    if (!fs::exists(npy)) return {};
    const k::Tensor x = k::data::load_npy(npy.string());
    batches[0].push_back(rows(x, 1));
    batches[1].push_back(rows(x, 7));
  }
  return batches;
}

struct Fixture {
  std::string file;  // relative to tests/data/keras
  std::string stem;  // of its input files
};

void export_fixtures(const std::string& tag, const std::vector<Fixture>& fixtures) {
  test_support::OnnxCases checks(tag);
  for (const auto& f : fixtures) {
    SCOPED_TRACE(f.file);
    const fs::path path = kData + f.file;
    auto model = k::load_model(path.string(), {.compile = false});
    std::string name = f.file;
    for (char& c : name)
      if (c == '/' || c == '.') c = '_';
    checks.add(name, *model, {}, fixture_batches(path, f.stem, model->inputs().size()));
  }
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

}  // namespace

TEST(OnnxFixtures, KerasModelsExportAndMatch) {
  SKIP_WITHOUT_ONNX_WRITER();
  std::vector<Fixture> fixtures;
  for (const std::string stem : {"mlp", "cnn", "two_inputs", "nested", "nested_seq", "nested_shared", "frozen",
                                 "nested_frozen"})
    for (const std::string suffix : {".keras", ".k2.h5"}) fixtures.push_back({stem + suffix, stem});
  fixtures.push_back({"augment.keras", "augment"});
  export_fixtures("fixtures", fixtures);
}

TEST(OnnxFixtures, KerasApplicationsExportAndMatch) {
  SKIP_WITHOUT_ONNX_WRITER();
  std::vector<Fixture> fixtures;
  for (const auto& e : fs::directory_iterator(kData + "applications")) {
    const std::string n = e.path().filename().string();
    if (n.size() > 6 && n.compare(n.size() - 6, 6, ".keras") == 0) {
      const std::string stem = n.substr(0, n.size() - 6);
      fixtures.push_back({"applications/" + n, stem});
      if (fs::exists(kData + "applications/" + stem + ".k2.h5")) fixtures.push_back({"applications/" + stem + ".k2.h5", stem});
    }
  }
  std::sort(fixtures.begin(), fixtures.end(), [](const Fixture& a, const Fixture& b) { return a.file < b.file; });
  ASSERT_GE(fixtures.size(), 15u);
  export_fixtures("applications", fixtures);
}

// The sequence fixtures: the recurrent ones (SimpleRNN, LSTM, GRU, the generic RNN over cells and
// stacked cells, Bidirectional, initial_state, ConvLSTM1D / 2D / 3D), attention and the masked
// ones (Embedding mask_zero, Masking, with their padded inputs) export and match; one with a layer
// without an ONNX mapping would fail naming it, and write nothing.
TEST(OnnxFixtures, SequenceFixturesExportOrFailClearly) {
  SKIP_WITHOUT_ONNX_WRITER();
  const std::vector<std::pair<std::string, std::string>> expected{
      {"rnn_model.keras", ""},
      {"rnn_model.k2.h5", ""},
      {"mha_model.keras", ""},
      {"sequence/bilstm_states.keras", ""},
      {"sequence/bilstm_states.k2.h5", ""},
      {"sequence/gru_both.keras", ""},
      {"sequence/gru_forecaster.keras", ""},
      {"sequence/seq2seq.keras", ""},
      {"sequence/seq2seq.k2.h5", ""},
      {"sequence/text_classifier.keras", ""},
      {"sequence/text_classifier.k2.h5", ""},
      {"sequence/transformer_block.keras", ""},
      {"sequence/transformer_block.k2.h5", ""},
      {"sequence/masked_series.keras", ""},
      {"sequence/masked_series.k2.h5", ""},
      {"sequence/concat_masks.keras", ""},
      {"sequence/concat_masks.k2.h5", ""},
      {"sequence/conv_lstm2d_forecaster.keras", ""},
      {"sequence/conv_lstm2d_forecaster.k2.h5", ""},
      {"sequence/conv_lstm1d.keras", ""},
      {"sequence/conv_lstm1d.k2.h5", ""},
      {"sequence/conv_lstm3d.keras", ""},
      {"sequence/conv_lstm3d.k2.h5", ""}};
  test_support::OnnxCases checks("sequence");
  const fs::path out = fs::temp_directory_path() / ("keras_onnx_fixture_error_" + std::to_string(getpid()) + ".onnx");
  std::vector<std::shared_ptr<k::Model>> keep;
  for (const auto& [file, error] : expected) {
    SCOPED_TRACE(file);
    auto model = k::load_model(kData + file, {.compile = false});
    if (!error.empty()) {
      try {
        k::export_model(*model, out.string());
        ADD_FAILURE() << "exported";
      } catch (const k::NotImplementedError& e) {
        EXPECT_NE(std::string(e.what()).find(error), std::string::npos) << e.what();
      }
      EXPECT_FALSE(fs::exists(out));
      continue;
    }
    const fs::path path = kData + file;
    std::string stem = path.filename().string();
    stem = stem.substr(0, stem.find('.'));
    std::string name = file;
    for (char& ch : name)
      if (ch == '/' || ch == '.') ch = '_';
    keep.push_back(model);
    checks.add(name, *model, {}, fixture_batches(path, stem, model->inputs().size()));
  }
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}
