// Every keras.applications architecture, as real Keras 3.15 and tf_keras 2.21 save it
// (tests/data/keras/applications/make_applications.py, weights=None, small inputs): each config
// rebuilds here with Keras's layers (names, classes, order) and weights (names, shapes, dtypes,
// order) as the manifest Keras printed. Weighted members: test_keras_applications_weights.cpp.
#include <gtest/gtest.h>

#include <map>

#include "keras/keras.h"
#include "tests/support/applications_fixtures.h"

using namespace keras;
using namespace keras::testing::applications;
using json = nlohmann::json;

namespace {

std::string strip_suffix(std::string name, const std::string& suffix) {
  if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

// The name Keras gave weight `entry`, as this framework names it: Keras 3's variable path may
// carry a name scope before the layer (NASNet's "reduction_A_block_stem_1/"), which weight files
// do not use; tf_keras adds ":0" and calls a DepthwiseConv2D's kernel "depthwise_kernel" (Keras 3
// renamed it "kernel"; files pair it by position, so both load).
std::string expected_path(const nlohmann::json& entry, bool keras2, const std::string& ours,
                          const std::map<std::string, std::string>& class_of) {
  if (!keras2) {
    const std::string path = entry.at("path").get<std::string>();
    const bool scoped = path.size() > ours.size() && path.compare(path.size() - ours.size(), ours.size(), ours) == 0 &&
                        path[path.size() - ours.size() - 1] == '/';
    return scoped ? ours : path;
  }
  std::string name = strip_suffix(entry.at("name").get<std::string>(), ":0");
  const auto slash = name.rfind('/');
  const std::string layer = name.substr(0, slash);
  if (class_of.count(layer) && class_of.at(layer) == "DepthwiseConv2D" && name.substr(slash + 1) == "depthwise_kernel")
    name = layer + "/kernel";
  return name;
}

// Our model against what Keras listed for it: layers, then weights, in order.
void expect_structure(const Model& model, const json& keras, bool keras2) {
  const auto& layers = model.layers();
  const auto& theirs = keras.at("layers");
  ASSERT_EQ(layers.size(), theirs.size());
  std::map<std::string, std::string> class_of;
  for (size_t i = 0; i < layers.size(); ++i) {
    ASSERT_EQ(layers[i]->name(), theirs[i].at("name").get<std::string>()) << "layer " << i;
    EXPECT_EQ(layers[i]->class_name(), theirs[i].at("class_name").get<std::string>()) << "layer " << i;
    class_of[layers[i]->name()] = layers[i]->class_name();
  }
  const auto weights = model.weights();
  const auto& wk = keras.at("weights");
  ASSERT_EQ(weights.size(), wk.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    ASSERT_EQ(weights[i].path(), expected_path(wk[i], keras2, weights[i].path(), class_of)) << "weight " << i;
    EXPECT_EQ(weights[i].value().shape(), wk[i].at("shape").get<Shape>()) << weights[i].path();
    EXPECT_EQ(weights[i].trainable(), wk[i].at("trainable").get<bool>()) << weights[i].path();
    EXPECT_EQ(dtype_name(weights[i].dtype()), wk[i].at("dtype").get<std::string>()) << weights[i].path();
  }
}

class Architecture : public ::testing::TestWithParam<std::string> {};

TEST_P(Architecture, ConfigsOfBothGenerationsRebuildWithKerasLayersAndWeights) {
  const std::string stem = GetParam();
  const json manifest = json::parse(read_text(find(stem, ".manifest.json")));
  for (const std::string gen : {"k3", "k2"}) {
    if (!manifest.contains(gen)) continue;  // tf_keras lacks a few architectures (the README lists them)
    SCOPED_TRACE(stem + "." + gen);
    const std::string config = find(stem, "." + gen + ".json");
    ASSERT_FALSE(config.empty()) << "no " << gen << " config";
    auto model = model_from_json(read_text(config));
    expect_structure(*model, manifest.at(gen), gen == "k2");
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Zoo, Architecture, ::testing::ValuesIn(stems_with(".manifest.json")), test_name);

// Every public constructor of keras.applications has its files; a missing one is a failure here,
// not a silently smaller suite.
TEST(Zoo, EveryKerasApplicationsArchitectureHasFixtures) {
  const json index = json::parse(read_text(kDir + "applications.json"));
  const auto stems = stems_with(".manifest.json");
  for (const auto& [name, entry] : index.at("models").items()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(std::find(stems.begin(), stems.end(), name) != stems.end());
  }
  EXPECT_GE(index.at("models").size(), 40u);
}

}  // namespace
