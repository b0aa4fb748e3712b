// The image preprocessing layers' configs are exactly what Keras 3 writes: each Keras object below
// is keras.saving.serialize_keras_object(layer) printed by real Keras 3.15.1 for the layer built
// with the options beside it (the constructor calls in make_cases() spell the same arguments).
// Checks: our layer built with those options serializes (inside a functional model) to that
// object; the object read back gives the same config; Keras's defaults are ours.
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "keras/saving/model_config.h"

using namespace keras;
namespace L = keras::layers;

namespace {

const std::vector<std::string>& keras_objects() {
  static const std::vector<std::string> objects = {
    R"json(
      {"module": "keras.layers", "class_name": "Resizing", "config": {"name": "resizing",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "height": 5, "width": 7, "interpolation": "bilinear", "crop_to_aspect_ratio": false,
      "pad_to_aspect_ratio": false, "fill_mode": "constant", "fill_value": 0.0, "antialias": false},
      "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "Resizing", "config": {"name": "r2", "trainable": true,
      "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "data_format": "channels_last", "height": 4, "width": 4,
      "interpolation": "nearest", "crop_to_aspect_ratio": true, "pad_to_aspect_ratio": false,
      "fill_mode": "constant", "fill_value": 0.0, "antialias": false}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "CenterCrop", "config": {"name": "center_crop",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "height": 3, "width": 4}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomCrop", "config": {"name": "random_crop",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "height": 3, "width": 4, "seed": 5}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomFlip", "config": {"name": "random_flip",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "seed": null, "mode": "horizontal_and_vertical"}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomFlip", "config": {"name": "rf2",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "seed": 3, "mode": "horizontal"}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomRotation", "config": {"name": "random_rotation",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "factor": [-0.2, 0.2], "fill_mode": "reflect", "fill_value": 0.0, "interpolation": "bilinear",
      "seed": null}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomRotation", "config": {"name": "rr2",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "factor": [-0.1, 0.3], "fill_mode": "constant", "fill_value": 0.5, "interpolation": "nearest",
      "seed": 1}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomZoom", "config": {"name": "random_zoom",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "height_factor": 0.2, "width_factor": null, "fill_mode": "reflect", "interpolation": "bilinear",
      "seed": null, "fill_value": 0.0}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomZoom", "config": {"name": "rz2",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "height_factor": [-0.3, 0.2], "width_factor": [0.1, 0.4], "fill_mode": "wrap",
      "interpolation": "bilinear", "seed": 2, "fill_value": 0.0}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomTranslation",
      "config": {"name": "random_translation", "trainable": true, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "data_format": "channels_last", "height_factor": 0.1, "width_factor": 0.2,
      "fill_mode": "reflect", "interpolation": "bilinear", "seed": null, "fill_value": 0.0},
      "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomContrast", "config": {"name": "random_contrast",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "factor": [0, 0.2], "value_range": [0, 255], "seed": null}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomContrast", "config": {"name": "rc2",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "factor": [0.1, 0.3], "value_range": [0, 1], "seed": 4}, "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomBrightness",
      "config": {"name": "random_brightness", "trainable": true, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "data_format": "channels_last", "factor": [-0.2, 0.2], "value_range": [0, 255], "seed": null},
      "registered_name": null}
    )json",
    R"json(
      {"module": "keras.layers", "class_name": "RandomBrightness", "config": {"name": "rb2",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last",
      "factor": [-0.1, 0.3], "value_range": [0, 1], "seed": 4}, "registered_name": null}
    )json",
  };
  return objects;
}

// The same layers, in the same order, as Keras was called (tests/data/keras's cfg: see the header).
std::vector<LayerPtr> make_cases() {
  return {
      L::Resizing({.height = 5, .width = 7, .name = "resizing"}),
      L::Resizing({.height = 4, .width = 4, .interpolation = "nearest", .crop_to_aspect_ratio = true, .name = "r2"}),
      L::CenterCrop({.height = 3, .width = 4, .name = "center_crop"}),
      L::RandomCrop({.height = 3, .width = 4, .seed = 5, .name = "random_crop"}),
      L::RandomFlip({.name = "random_flip"}),
      L::RandomFlip({.mode = "horizontal", .seed = 3, .name = "rf2"}),
      L::RandomRotation({.factor = 0.2, .name = "random_rotation"}),
      L::RandomRotation({.factor = {-0.1, 0.3}, .fill_mode = "constant", .interpolation = "nearest", .seed = 1,
                         .fill_value = 0.5, .name = "rr2"}),
      L::RandomZoom({.height_factor = 0.2, .name = "random_zoom"}),
      L::RandomZoom({.height_factor = {-0.3, 0.2}, .width_factor = L::FactorArg(0.1, 0.4), .fill_mode = "wrap", .seed = 2,
                     .name = "rz2"}),
      L::RandomTranslation({.height_factor = 0.1, .width_factor = 0.2, .name = "random_translation"}),
      L::RandomContrast({.factor = 0.2, .name = "random_contrast"}),
      L::RandomContrast({.factor = {0.1, 0.3}, .value_range = {0, 1}, .seed = 4, .name = "rc2"}),
      L::RandomBrightness({.factor = 0.2, .name = "random_brightness"}),
      L::RandomBrightness({.factor = {-0.1, 0.3}, .value_range = {1, 0}, .seed = 4, .name = "rb2"}),
  };
}

// The layer's entry in a functional model's Keras 3 config, without what a functional model adds
// (name, inbound_nodes, build_config): serialize_keras_object's form.
json serialized_in_model(const LayerPtr& layer) {
  KerasTensor in = L::Input({6, 8, 3});
  Model model(in, (*layer)(in));
  const json config = serialize_model(model);
  for (json entry : config["config"]["layers"]) {
    if (entry["class_name"] != layer->class_name()) continue;
    for (const char* key : {"name", "inbound_nodes", "build_config"}) entry.erase(key);
    return entry;
  }
  ADD_FAILURE() << layer->class_name() << " not found in the model config";
  return {};
}

}  // namespace

TEST(AugmentConfigs, WrittenExactlyAsKeras3) {
  auto layers = make_cases();
  ASSERT_EQ(layers.size(), keras_objects().size());
  for (size_t i = 0; i < layers.size(); ++i) {
    json expected = json::parse(keras_objects()[i]);
    SCOPED_TRACE(expected["class_name"].get<std::string>() + " " + expected["config"]["name"].get<std::string>());
    // Numbers compare by value (Keras writes the contrast factor's clipped bound as the int 0).
    EXPECT_EQ(serialized_in_model(layers[i]), expected) << "ours:  " << serialized_in_model(layers[i]).dump()
                                                        << "\nKeras: " << expected.dump();
  }
}

TEST(AugmentConfigs, KerasObjectsLoadAndRoundTrip) {
  auto layers = make_cases();
  for (size_t i = 0; i < layers.size(); ++i) {
    json expected = json::parse(keras_objects()[i]);
    SCOPED_TRACE(expected["class_name"].get<std::string>() + " " + expected["config"]["name"].get<std::string>());
    LayerPtr loaded = layer_from_config(expected["class_name"], expected["config"]);
    EXPECT_EQ(loaded->get_config(), layers[i]->get_config());
    EXPECT_EQ(serialized_in_model(loaded), expected);
  }
}

TEST(AugmentConfigs, KerasDefaults) {
  json flip = L::RandomFlip()->get_config();
  EXPECT_EQ(flip["mode"], "horizontal_and_vertical");
  EXPECT_TRUE(flip["seed"].is_null());
  json rot = L::RandomRotation({.factor = 0.25})->get_config();
  EXPECT_EQ(rot["factor"], json::array({-0.25, 0.25}));
  EXPECT_EQ(rot["fill_mode"], "reflect");
  EXPECT_EQ(rot["interpolation"], "bilinear");
  EXPECT_EQ(rot["fill_value"], 0.0);
  json zoom = L::RandomZoom({.height_factor = {0.1, 0.2}})->get_config();
  EXPECT_EQ(zoom["height_factor"], json::array({0.1, 0.2}));
  EXPECT_TRUE(zoom["width_factor"].is_null());
  json brightness = L::RandomBrightness({.factor = 0.5})->get_config();
  EXPECT_EQ(brightness["value_range"], json::array({0, 255}));
  json resizing = L::Resizing({.height = 2, .width = 2})->get_config();
  EXPECT_EQ(resizing["interpolation"], "bilinear");
  EXPECT_EQ(resizing["antialias"], false);
  // Keras 2 (tf_keras) configs of the same classes load too: a factor as given, no data_format.
  LayerPtr k2 = layer_from_config("RandomRotation", {{"name", "rot"}, {"factor", 0.1}, {"fill_mode", "nearest"},
                                                     {"interpolation", "bilinear"}, {"seed", nullptr}, {"fill_value", 0.0}});
  EXPECT_EQ(k2->get_config()["factor"], json::array({-0.1, 0.1}));
  for (const char* cls : {"Resizing", "CenterCrop", "RandomCrop", "RandomFlip", "RandomRotation", "RandomZoom",
                          "RandomTranslation", "RandomContrast", "RandomBrightness"}) {
    auto names = registered_layers();
    EXPECT_NE(std::find(names.begin(), names.end(), cls), names.end()) << cls;
  }
}
