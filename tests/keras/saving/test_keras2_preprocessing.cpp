// to_keras2 of the image preprocessing layers against the configs real tf_keras 2.21 writes
// (tests/data/keras/keras2_preprocessing_configs.json, made by make_keras2_preprocessing_configs.py
// from the same layer built in Keras 3.15 and in tf_keras), and the way back.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "tests/support/expect_error.h"

namespace {

using keras::json;

const json& cases() {
  static const json c = [] {
    std::ifstream in(std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/keras2_preprocessing_configs.json");
    return in ? json::parse(in)["cases"] : json();
  }();
  return c;
}

json sequential(const json& layer_entry, const json& input_config) {
  return {{"class_name", "Sequential"},
          {"config",
           {{"name", "s"},
            {"layers", json::array({{{"class_name", "InputLayer"}, {"config", input_config}}, layer_entry})}}}};
}

json keras3_model(const json& layer_entry) {
  return sequential(layer_entry, {{"batch_shape", {nullptr, 6, 8, 3}}, {"dtype", "float32"}, {"name", "in"}});
}

json keras2_model(const json& layer_entry) {
  return sequential(layer_entry, {{"batch_input_shape", {nullptr, 6, 8, 3}}, {"dtype", "float32"}, {"name", "in"}});
}

TEST(Keras2Preprocessing, FixtureHoldsEveryImageLayer) {
  ASSERT_TRUE(cases().is_object()) << "tests/data/keras/keras2_preprocessing_configs.json";
  for (const char* cls : {"Resizing", "CenterCrop", "RandomCrop", "RandomFlip", "RandomRotation", "RandomZoom",
                          "RandomTranslation", "RandomContrast", "RandomBrightness", "Rescaling", "Normalization"})
    EXPECT_TRUE(cases().contains(cls)) << cls;
}

TEST(Keras2Preprocessing, ToKeras2WritesTheConfigTfKerasWrites) {
  for (const auto& [cls, c] : cases().items()) {
    SCOPED_TRACE(cls);
    json k2 = keras::to_keras2(keras3_model(c["keras3"]));
    const json& layer = k2["config"]["layers"][1];
    EXPECT_EQ(layer["class_name"], c["tf_keras"]["class_name"]);
    // tf_keras's random layers add rng_type, which Keras 3 refuses in a legacy .h5 and tf_keras
    // defaults: the one key left out.
    json expected = c["tf_keras"]["config"];
    if (cls.rfind("Random", 0) == 0) {
      EXPECT_EQ(expected["rng_type"], "stateful");
      expected.erase("rng_type");
    }
    EXPECT_EQ(layer["config"], expected) << "ours: " << layer["config"].dump();
  }
}

TEST(Keras2Preprocessing, TfKerasConfigLoadsAsTheKeras3Layer) {
  for (const auto& [cls, c] : cases().items()) {
    SCOPED_TRACE(cls);
    auto model = keras::model_from_config(keras2_model(c["tf_keras"]));
    json ours = keras::serialize_model(*model)["config"]["layers"];
    const json& layer = ours[ours.size() - 1];
    EXPECT_EQ(layer["class_name"], cls);
    EXPECT_EQ(layer["config"], c["keras3"]["config"]) << "ours: " << layer["config"].dump();
  }
}

void expect_refused(const std::string& cls, const std::string& key, const json& value) {
  json entry = cases().at(cls)["keras3"];
  entry["config"][key] = value;
  keras::testing::expect_error<keras::ValueError>([&] { keras::to_keras2(keras3_model(entry)); },
                                                  {"to_keras2", cls, "'" + key + "'", value.dump()});
}

TEST(Keras2Preprocessing, ValuesTfKerasCannotExpressAreRefused) {
  ASSERT_TRUE(cases().is_object());
  for (const char* cls : {"Resizing", "CenterCrop", "RandomCrop", "RandomFlip", "RandomRotation", "RandomZoom",
                          "RandomTranslation", "RandomContrast", "RandomBrightness"})
    expect_refused(cls, "data_format", "channels_first");
  expect_refused("Resizing", "pad_to_aspect_ratio", true);
  expect_refused("Resizing", "antialias", true);
  expect_refused("Resizing", "fill_mode", "reflect");
  expect_refused("Resizing", "fill_value", 1.0);
  expect_refused("RandomContrast", "value_range", json::array({0, 1}));
}

}  // namespace
