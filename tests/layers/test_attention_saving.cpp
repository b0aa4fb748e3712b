// A model with MultiHeadAttention (self-attention, then Dense) in Keras's files: the
// .keras and legacy .h5 files Keras 3 wrote load and predict as Keras did, and the files we
// write hold the same weights tree (.keras: layers/multi_head_attention/query_dense/vars/0 ...;
// .h5: self_attention/self_attention/query/kernel ...) and load back to the same predictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "keras/saving/inspect.h"
#include "keras/saving/saving.h"
#include "layers/dense.h"
#include "layers/input_layer.h"
#include "layers/multi_head_attention.h"
#include "tests/support/json_reference.h"
#include "tests/support/weights_models.h"

using namespace keras;
using keras::testing::max_relative_error;
using keras::testing::tensor_from_json;

namespace {

const json& model_reference() {
  static const json ref = keras::testing::load_json_reference("attention_reference.json")["mha_model"];
  return ref;
}

std::string fixture(const std::string& name) { return std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/" + name; }

// The same model written in C++.
std::shared_ptr<Model> build_model() {
  auto tokens = layers::Input({4, 6}, {.name = "tokens"});
  auto mha = layers::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .name = "self_attention"});
  auto x = mha(std::vector<KerasTensor>{tokens, tokens})[0];
  auto out = layers::Dense({.units = 3, .name = "head"})(x);
  return std::make_shared<Model>(tokens, out, "mha_model");
}

// (path, shape) of every weight dataset a file holds, sorted, as make_attention_reference.py
// lists them.
std::vector<std::pair<std::string, Shape>> weight_tree(const std::string& path) {
  std::vector<std::pair<std::string, Shape>> out;
  json d = inspect_file(path);
  for (const auto& w : d["weights"]) {
    std::string p = w["path"].get<std::string>();
    if (!p.empty() && p[0] == '/') p = p.substr(1);
    // Our .h5 names weights the Keras 2 way ("kernel:0"), which both Keras generations read.
    if (p.size() > 2 && p.compare(p.size() - 2, 2, ":0") == 0) p.resize(p.size() - 2);
    out.emplace_back(p, w["shape"].get<Shape>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::string, Shape>> keras_tree(const char* key) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& e : model_reference()[key]) out.emplace_back(e[0].get<std::string>(), e[1].get<Shape>());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(MultiHeadAttentionSaving, KerasFilesLoadAndPredictAsKeras) {
  Tensor x = tensor_from_json(model_reference()["input"]);
  Tensor want = tensor_from_json(model_reference()["output"]);
  for (const std::string file : {"mha_model.keras", "mha_model.k3.h5"}) {
    SCOPED_TRACE(file);
    auto model = load_model(fixture(file));
    EXPECT_LT(max_relative_error(model->predict(x), want), 1e-5);
    auto weights = model->weights();
    ASSERT_EQ(weights.size(), 10u);
    EXPECT_EQ(weights[0].path(), "self_attention/query/kernel");
    EXPECT_EQ(weights[7].path(), "self_attention/attention_output/bias");
  }
}

TEST(MultiHeadAttentionSaving, OurFilesHoldKerasTreeAndRoundTrip) {
  Tensor x = tensor_from_json(model_reference()["input"]);
  Tensor want = tensor_from_json(model_reference()["output"]);
  auto keras_model = load_model(fixture("mha_model.keras"));
  auto model = build_model();
  model->set_weights(keras_model->get_weights());
  ASSERT_LT(max_relative_error(model->predict(x), want), 1e-5) << "the C++ model differs from Keras's";
  auto dir = weights_test::temp_dir("attention_saving");
  const std::string k = (dir / "ours.keras").string(), h = (dir / "ours.h5").string();
  save_model(*model, k);
  save_model(*model, h);
  EXPECT_EQ(weight_tree(k), keras_tree("keras_tree"));
  EXPECT_EQ(weight_tree(h), keras_tree("h5_tree"));
  for (const std::string& file : {k, h}) {
    SCOPED_TRACE(file);
    auto back = load_model(file);
    EXPECT_LT(max_relative_error(back->predict(x), want), 1e-5);
  }
  // KERAS_VERIFY_EXPORT=DIR keeps our files there, for loading them into Keras by hand.
  if (const char* out = std::getenv("KERAS_VERIFY_EXPORT"); out && *out) {
    std::filesystem::create_directories(out);
    for (const std::string& file : {k, h})
      std::filesystem::copy_file(file, std::string(out) + "/mha_model_ours" + std::filesystem::path(file).extension().string(),
                                 std::filesystem::copy_options::overwrite_existing);
  }
  std::filesystem::remove_all(dir);
}

// tf_keras's MultiHeadAttention has no gate: a legacy .h5 of a gated one is refused, naming the
// key, and the file is not written; the .keras file keeps it.
TEST(AttentionSaving, LegacyH5RefusesAGatedMultiHeadAttention) {
  auto x = layers::Input({4, 6});
  auto y = layers::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .use_gate = true})(std::vector<KerasTensor>{x, x})[0];
  Model model(x, y);
  const auto dir = std::filesystem::temp_directory_path() / ("gated_mha_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  try {
    model.save((dir / "gated.h5").string());
    ADD_FAILURE() << "expected a ValueError for use_gate in a legacy .h5";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'use_gate'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "gated.h5"));
  model.save((dir / "gated.keras").string());
  EXPECT_TRUE(std::filesystem::exists(dir / "gated.keras"));
  std::filesystem::remove_all(dir);
}
