// LayerScale (ConvNeXt's per-channel residual scale): the layer contract, values against Keras 3,
// its weight as Keras 3 names it, the config both Keras generations write, and its errors.
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "layers/layer_scale.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

namespace {

// Entries of ConvNeXtTiny.k3.json.gz and ConvNeXtTiny.k2.json.gz
// (tests/data/keras/applications/, written by Keras 3.15.1 and tf_keras 2.21).
const char* kKeras3Entry = R"({"module": "keras.src.applications.convnext", "class_name": "LayerScale",
  "config": {"name": "convnext_tiny_stage_0_block_0_layer_scale", "trainable": true,
             "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
             "init_values": 1e-06, "projection_dim": 96},
  "registered_name": "LayerScale", "build_config": {"input_shape": [null, 8, 8, 96]}})";
const char* kKeras2Entry = R"({"module": "tf_keras.src.applications.convnext", "class_name": "LayerScale",
  "config": {"name": "convnext_tiny_stage_0_block_0_layer_scale", "trainable": true, "dtype": "float32",
             "init_values": 1e-06, "projection_dim": 96},
  "registered_name": "LayerScale", "build_config": {"input_shape": [null, 8, 8, 96]}})";

// A functional model Input(8, 8, 96) -> the layer of `entry`, read by model_from_config.
std::shared_ptr<Model> model_around(const json& entry) {
  json layer = entry;
  layer["name"] = layer["config"]["name"];
  layer["inbound_nodes"] = json::parse(R"([[["input", 0, 0, {}]]])");
  json model = {{"class_name", "Functional"},
                {"config",
                 {{"name", "m"},
                  {"layers", json::array({json::parse(R"({"class_name": "InputLayer", "name": "input",
                      "config": {"name": "input", "batch_input_shape": [null, 8, 8, 96], "dtype": "float32"},
                      "inbound_nodes": []})"),
                                          layer})},
                  {"input_layers", json::array({json::array({"input", 0, 0})})},
                  {"output_layers", json::array({json::array({layer["name"], 0, 0})})}}}};
  return model_from_config(model);
}

}  // namespace

TEST(LayerScale, Harness) {
  run_layer_harness({.name = "LayerScale",
                     .make = [] { return LayerPtr(L::LayerScale({.init_values = 0.5, .projection_dim = 3})); },
                     .input_shape = {2, 4, 4, 3},
                     .weight_shapes = {{3}},
                     .gradcheck_input_shape = {2, 2, 3}});
}

// Keras 3.15.1: keras.src.applications.convnext.LayerScale(0.25, 3) on x = arange(12).reshape(2, 2, 3) - 5,
// then again with set_weights([[0.5, -1, 2]]).
TEST(LayerScale, ValuesMatchKeras3) {
  std::vector<float> xs(12);
  for (int i = 0; i < 12; ++i) xs[i] = static_cast<float>(i - 5);
  Tensor x = Tensor::from_vector(xs, {2, 2, 3});
  L::LayerScale layer({.init_values = 0.25, .projection_dim = 3});
  EXPECT_EQ(layer(x).to_vector<float>(),
            (std::vector<float>{-1.25, -1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5}));
  layer->set_weights({Tensor::from_vector(std::vector<float>{0.5, -1, 2})});
  EXPECT_EQ(layer(x).to_vector<float>(), (std::vector<float>{-2.5, 4, -6, -1, 1, 0, 0.5, -2, 6, 2, -5, 12}));
}

// Keras 3 adds the weight without a name: path "<layer>/variable" (tf_keras calls it "gamma").
TEST(LayerScale, WeightIsKeras3sUnnamedVariable) {
  auto model = model_around(json::parse(kKeras3Entry));
  auto layer = model->get_layer("convnext_tiny_stage_0_block_0_layer_scale");
  ASSERT_EQ(layer->weights().size(), 1u);
  const Variable w = layer->weights()[0];
  EXPECT_EQ(w.path(), "convnext_tiny_stage_0_block_0_layer_scale/variable");
  EXPECT_EQ(w.value().shape(), (Shape{96}));
  EXPECT_TRUE(w.trainable());
  for (float v : w.value().to_vector<float>()) EXPECT_FLOAT_EQ(v, 1e-6f);
}

// Both generations' entries read; the model writes the entry exactly as Keras 3 wrote it.
TEST(LayerScale, ConfigsOfBothGenerationsWriteBackKeras3sEntry) {
  const json k3 = json::parse(kKeras3Entry);
  for (const char* text : {kKeras3Entry, kKeras2Entry}) {
    auto model = model_around(json::parse(text));
    json entry = serialize_model(*model)["config"]["layers"][1];
    entry.erase("name");
    entry.erase("inbound_nodes");
    EXPECT_EQ(entry, k3) << text;
  }
  // The Keras 2 schema (legacy .h5) names the class alone, as tf_keras reads it back.
  json k2 = to_keras2(serialize_model(*model_around(k3)));
  EXPECT_EQ(k2["config"]["layers"][1]["class_name"], "LayerScale");
  EXPECT_EQ(k2["config"]["layers"][1]["config"]["projection_dim"], 96);
}

TEST(LayerScale, Errors) {
  expect_error<ValueError>([] { L::LayerScale({.projection_dim = 0}); }, {"LayerScale", "projection_dim > 0", "0"});
  expect_error<ValueError>([] { layer_from_config("LayerScale", json{{"init_values", 0.1}}); }, {"'projection_dim'", "none"});
  expect_error<ValueError>([] { layer_from_config("LayerScale", json{{"projection_dim", 4}, {"init_values", "x"}}); },
                           {"'init_values'", "a number"});
  auto x = L::Input({5, 8});
  L::LayerScale layer({.projection_dim = 4, .name = "scale"});
  expect_error<ShapeError>([&] { layer(x); }, {"'scale'", "projection_dim = 4", "(None, 5, 8)"});
}
