// CustomScaleLayer (layers/custom_scale_layer.h), InceptionResNetV2's residual scaling: the layer
// harness, x + residual * scale against a plain loop, and its names in files: Keras 3's module and
// registered_name, tf_keras's "Custom>CustomScaleLayer", and the Keras 2 schema written for .h5.
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

TEST(CustomScaleLayerHarness, TwoInputs) {
  run_layer_harness({.name = "CustomScaleLayer scale 0.17",
                     .make = [] { return LayerPtr(L::CustomScaleLayer({.scale = 0.17})); },
                     .weight_shapes = {},
                     .input_shapes = {{2, 3, 3, 4}, {2, 3, 3, 4}}});
}

TEST(CustomScaleLayer, AddsTheScaledResidual) {
  Tensor x = random::normal({2, 3, 3, 4}, 0, 1, uint64_t{1});
  Tensor r = random::normal({2, 3, 3, 4}, 0, 1, uint64_t{2});
  std::vector<float> y = L::CustomScaleLayer({.scale = 0.1})({x, r}).to_vector<float>();
  std::vector<float> xv = x.to_vector<float>(), rv = r.to_vector<float>();
  // Keras: inputs[0] + inputs[1] * scale, the Python float scale taking the inputs' float32.
  for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(y[i], xv[i] + rv[i] * 0.1f) << i;
}

namespace {
// InceptionResNetV2.k3.json, the first block35 scaling (module, registered_name, build_config).
json keras3_entry() {
  return json::parse(R"({"module": "keras.src.applications.inception_resnet_v2", "class_name": "CustomScaleLayer",
      "config": {"name": "custom_scale_layer", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "scale": 0.17}, "registered_name": "CustomScaleLayer",
      "build_config": {"input_shape": [[null, 7, 7, 320], [null, 7, 7, 320]]}})");
}

std::shared_ptr<Model> model_with(LayerPtr scale) {
  auto a = L::Input({7, 7, 320}), b = L::Input({7, 7, 320});
  return std::make_shared<Model>(std::vector<KerasTensor>{a, b}, (*scale)({a, b}));
}

json scale_entry(const json& model_config) {
  for (const auto& e : model_config["config"]["layers"])
    if (e["class_name"] == "CustomScaleLayer" || e["class_name"] == "Custom>CustomScaleLayer") return e;
  return nullptr;
}
}  // namespace

TEST(CustomScaleLayerConfig, WrittenAsKeras3ReadFromBothGenerations) {
  json want = keras3_entry();
  // Keras 3 entry (registered_name without a package) and tf_keras's (InceptionResNetV2.k2.json).
  json tf_keras_config = want["config"];
  tf_keras_config["dtype"] = "float32";
  for (const auto& [name, config] : std::vector<std::pair<std::string, json>>{
           {"CustomScaleLayer", want["config"]}, {"Custom>CustomScaleLayer", tf_keras_config}}) {
    SCOPED_TRACE(name);
    auto model = model_with(layer_from_config(name, config));
    json k3 = serialize_model(*model);
    json entry = scale_entry(k3);
    entry.erase("inbound_nodes");
    entry.erase("name");
    EXPECT_EQ(entry, want);
    // The Keras 2 schema (legacy .h5 model_config) names it as tf_keras registered it, the one
    // name a Keras loads from a .h5; it reads back to the same model.
    json k2 = to_keras2(k3);
    EXPECT_EQ(scale_entry(k2)["class_name"], "Custom>CustomScaleLayer");
    EXPECT_EQ(serialize_model(*model_from_config(k2)), k3);
  }
  EXPECT_EQ(registered_layer_module("CustomScaleLayer"), "keras.src.applications.inception_resnet_v2");
  EXPECT_EQ(registered_layer_name("CustomScaleLayer"), "Custom>CustomScaleLayer");
  EXPECT_EQ(registered_layer_module("Dense"), "");
}

TEST(CustomScaleLayerErrors, ScaleAndInputs) {
  expect_error<ValueError>([] { L::CustomScaleLayer(); }, {"a scale", "no default"});
  expect_error<ValueError>([] { layer_from_config("CustomScaleLayer", {{"name", "s"}}); }, {"'scale'", "none"});
  expect_error<ValueError>([] { layer_from_config("CustomScaleLayer", {{"scale", "big"}}); }, {"'scale'", "\"big\""});
  expect_error<ShapeError>([] { L::CustomScaleLayer({.scale = 0.2})(L::Input({3})); }, {"two inputs", "1 inputs"});
  expect_error<ShapeError>([] { L::CustomScaleLayer({.scale = 0.2})({L::Input({3}), L::Input({4})}); }, {"(None, 3)", "(None, 4)"});
  // Another package is not this class.
  expect_error<TypeError>([] { layer_from_config("Other>CustomScaleLayer", {{"scale", 1.0}}); }, {"Other>CustomScaleLayer"});
}
