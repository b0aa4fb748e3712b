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

bool ends_with_path(const std::string& path, const std::string& tail) {
  return path.size() > tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0 &&
         path[path.size() - tail.size() - 1] == '/';
}

// The name Keras gave weight `entry`, as this framework names it (`ours` when they agree up to
// Keras's own naming quirks, which weight files do not depend on: they pair by position or key):
//  - Keras 3's variable path may carry a name scope before the layer (NASNet's
//    "reduction_A_block_stem_1/"), and numbers unnamed variables process-wide (LayerScale's
//    "variable_3"; ours is "variable");
//  - tf_keras adds ":0", leaves out a nested Sequential's name (ConvNeXt's stem), calls a
//    DepthwiseConv2D's kernel "depthwise_kernel" and LayerScale's weight "gamma".
std::string expected_path(const nlohmann::json& entry, bool keras2, const std::string& ours,
                          const std::map<std::string, std::string>& class_of) {
  std::string name = keras2 ? strip_suffix(entry.at("name").get<std::string>(), ":0") : entry.at("path").get<std::string>();
  if (!keras2) {
    if (ends_with_path(name, ours)) return ours;
    const auto us = name.rfind('_');
    const bool numbered = us != std::string::npos && name.compare(0, us, ours) == 0 && ours.ends_with("/variable") &&
                          name.find_first_not_of("0123456789", us + 1) == std::string::npos;
    return numbered ? ours : name;
  }
  const auto slash = name.rfind('/');
  const std::string layer = name.substr(0, slash), weight = name.substr(slash + 1);
  const std::string cls = class_of.count(layer) ? class_of.at(layer) : "";
  if ((cls == "DepthwiseConv2D" && weight == "depthwise_kernel") || (cls == "LayerScale" && weight == "gamma"))
    name = layer + (cls == "LayerScale" ? "/variable" : "/kernel");
  return ends_with_path(ours, name) ? ours : name;
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
