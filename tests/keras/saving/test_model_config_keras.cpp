// Configs written by real Keras 3 and tf_keras (tests/data/configs, made by make_configs.py):
// model_from_config rebuilds each (to_json and legacy .h5 model_config forms), and with Keras's
// weights set by layer name the rebuilt model predicts what Keras predicted.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "keras/keras.h"
#include "keras/saving/model_config.h"

using namespace keras;
namespace fs = std::filesystem;

namespace {

Tensor array(const json& a) {
  return Tensor::from_vector(a.at("data").get<std::vector<float>>(), a.at("shape").get<Shape>());
}

void set_weights_by_name(Model& model, const json& weights) {
  for (const auto& [name, value] : weights.items()) {
    LayerPtr layer = model.get_layer(name);
    if (value.is_object()) {
      auto nested = std::dynamic_pointer_cast<Model>(layer);
      ASSERT_TRUE(nested) << name;
      set_weights_by_name(*nested, value["nested"]);
      continue;
    }
    TensorList ws;
    for (const auto& a : value) ws.push_back(array(a));
    layer->set_weights(ws);
  }
}

std::vector<fs::path> files_in(const std::string& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

const std::string kConfigs = std::string(KERAS_SOURCE_DIR) + "/tests/data/configs";

}  // namespace

TEST(ModelConfigKeras, RealConfigsRebuildAndPredictLikeKeras) {
  auto files = files_in(kConfigs, ".json");
  ASSERT_GE(files.size(), 19u) << "run tests/data/configs/make_configs.py";
  for (const auto& f : files) {
    json doc = read_json(f);
    for (const auto& [kind, config] : doc["configs"].items()) {
      SCOPED_TRACE(f.filename().string() + " " + kind);
      auto model = model_from_config(config);
      set_weights_by_name(*model, doc["weights"]);
      TensorList xs;
      for (const auto& x : doc["inputs"]) xs.push_back(array(x));
      TensorList ys = model->predict_on_batch(xs);
      ASSERT_EQ(ys.size(), doc["outputs"].size());
      for (size_t i = 0; i < ys.size(); ++i) {
        Tensor want = array(doc["outputs"][i]);
        ASSERT_EQ(ys[i].shape(), want.shape());
        auto got = ys[i].to_vector<float>(), ref = want.to_vector<float>();
        for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], ref[k], 1e-5 + 1e-5 * std::abs(ref[k])) << "output " << i;
      }
      // What we write back rebuilds to the same model in both schemas.
      json k3 = serialize_model(*model);
      EXPECT_EQ(serialize_model(*model_from_config(k3)), k3);
      EXPECT_EQ(serialize_model(*model_from_config(to_keras2(k3))), k3);
    }
  }
}

TEST(ModelConfigKeras, NestedIndicesAsKerasWritesThem) {
  // outer = Model(x, [inner(inner(x)), head(concat(inner(x), inner(inner(x))))]).
  json k3 = read_json(kConfigs + "/nested.k3.json")["configs"]["k3_json"];
  EXPECT_EQ(k3["config"]["output_layers"][0], json::parse(R"(["inner", 2, 0])"));
  json k2 = read_json(kConfigs + "/nested.k2.json")["configs"]["k2_json"];
  EXPECT_EQ(k2["config"]["output_layers"][0], json::parse(R"(["inner", 2, 0])"));
  // Ours, for the rebuilt model, match what each Keras wrote.
  auto model = model_from_config(k3);
  json ours = serialize_model(*model);
  EXPECT_EQ(ours["config"]["output_layers"], k3["config"]["output_layers"]);
  for (const auto& e : ours["config"]["layers"])
    for (const auto& theirs : k3["config"]["layers"])
      if (e["name"] == theirs["name"]) EXPECT_EQ(e["inbound_nodes"].size(), theirs["inbound_nodes"].size());
  json ours2 = to_keras2(ours);
  EXPECT_EQ(ours2["config"]["output_layers"], k2["config"]["output_layers"]);
  for (const auto& e : ours2["config"]["layers"])
    if (e["name"] == "cat") EXPECT_EQ(e["inbound_nodes"], json::parse(R"([[["inner", 1, 0, {}], ["inner", 2, 0, {}]]])"));
}

TEST(ModelConfigKeras, InteropFixturesFromToJsonLoad) {
  // Files of the interop fixture set (tests/data/keras, make_fixtures.py), when present.
  const std::string dir = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras";
  auto k3 = files_in(dir, ".k3.json"), k2 = files_in(dir, ".k2.json");
  if (k3.empty() && k2.empty()) GTEST_SKIP() << "no fixtures in " << dir;
  for (const auto& f : k3) {
    SCOPED_TRACE(f.string());
    std::ifstream in(f);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto model = model_from_json(text);
    EXPECT_EQ(serialize_model(*model_from_config(to_keras2(serialize_model(*model)))), serialize_model(*model));
  }
  for (const auto& f : k2) {
    SCOPED_TRACE(f.string());
    std::ifstream in(f);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto model = model_from_json(text);
    EXPECT_FALSE(model->layers().empty());
  }
}
