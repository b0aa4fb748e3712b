// What Keras 3 records about a layer when it saves a functional model (layers/keras_signature.h),
// against real Keras 3.15 (tests/data/keras/call_records.json, made by make_call_records.py): for
// every layer class here, a model Input -> layer, plus explicit `training`, inputs of another
// dtype, and nested Functional/Sequential calls. Each model read by model_from_config and written
// by serialize_model is Keras's object itself (floats normalised): configs, build_config only where
// Keras records one, node kwargs with the call defaults Keras fills in. to_keras2 leaves those
// defaults out of Keras 2 nodes (tf_keras would honour them) and keeps what the caller passed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using keras::testing::expect_error;
using keras::testing::applications::json_differences;

namespace {

const json& records() {
  static const json r = [] {
    std::ifstream in(std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/call_records.json");
    return in ? json::parse(in) : json();
  }();
  return r;
}

const json& record(const std::string& name) { return records().at("models").at(name); }

// The entry of layer `name` in a Functional object's config.
const json& entry(const json& model, const std::string& name) {
  for (const auto& e : model.at("config").at("layers"))
    if (e.at("name") == name) return e;
  throw std::runtime_error("no layer " + name);
}

// The Keras 2 node list of layer `name` in a to_keras2 object.
json keras2_kwargs(const json& model, const std::string& name) {
  return entry(model, name).at("inbound_nodes").at(0).at(0).at(3);
}

}  // namespace

TEST(CallRecords, EveryLayerClassIsWrittenAsKeras3WritesIt) {
  ASSERT_TRUE(records().is_object()) << "tests/data/keras/call_records.json (make_call_records.py)";
  ASSERT_GE(records().at("models").size(), 60u);
  for (const auto& [name, keras_object] : records().at("models").items()) {
    SCOPED_TRACE(name);
    json keras = keras_object;
    keras.erase("compile_config");  // Model.to_json's, written here only when compiled
    json ours = serialize_model(*model_from_config(keras));
    std::vector<std::string> diffs;
    json_differences(ours, keras, "", diffs);
    for (const auto& d : diffs) ADD_FAILURE() << d;
  }
}

// The rule behind the records, spelled out on the cases that differ.
TEST(CallRecords, BuildConfigOnlyForLayersKerasBuildsOnFirstCall) {
  EXPECT_FALSE(entry(record("Dropout"), "layer").contains("build_config"));
  EXPECT_FALSE(entry(record("ReLU"), "layer").contains("build_config"));
  EXPECT_FALSE(entry(record("Dropout"), "x").contains("build_config"));  // InputLayer
  EXPECT_TRUE(entry(record("Flatten"), "layer").contains("build_config"));
  EXPECT_TRUE(entry(record("Add"), "layer").contains("build_config"));
  for (const char* name : {"Dropout", "Flatten", "Add", "ReLU", "Normalization"}) {
    json ours = serialize_model(*model_from_config(record(name)));
    for (const auto& e : record(name).at("config").at("layers"))
      EXPECT_EQ(entry(ours, e.at("name")).contains("build_config"), e.contains("build_config")) << name;
  }
}

TEST(CallRecords, NodeKwargsHoldTheCallDefaultsUnlessKerasConvertsTheInputs) {
  auto kwargs = [](const std::string& model, const std::string& layer) {
    return entry(record(model), layer).at("inbound_nodes").at(0).at("kwargs");
  };
  EXPECT_EQ(kwargs("Dropout", "layer"), json::parse(R"({"training": false})"));
  EXPECT_EQ(kwargs("BatchNormalization", "layer"), json::parse(R"({"mask": null})"));
  EXPECT_EQ(kwargs("BatchNormalization_training_false", "layer"), json::parse(R"({"training": false})"));
  EXPECT_EQ(kwargs("Resizing_int32", "layer"), json::object());
  EXPECT_EQ(kwargs("RandomFlip_int32", "layer"), json::parse(R"({"training": true})"));
  EXPECT_EQ(kwargs("nested_functional_two_inputs", "inner"), json::parse(R"({"mask": [null, null]})"));
  EXPECT_EQ(kwargs("nested_functional_training_false", "inner"), json::parse(R"({"mask": null, "training": false})"));
  // Built here with the C++ API, the same calls record the same kwargs.
  auto x = layers::Input({4}, {.name = "x"});
  auto dropout = layers::Dropout({.rate = 0.5});
  auto y = dropout(x);
  auto z = layers::Dropout({.rate = 0.5, .name = "explicit"})(y, {.training = true});
  json ours = serialize_model(Model(x, z));
  EXPECT_EQ(entry(ours, "dropout").at("inbound_nodes")[0].at("kwargs"), json::parse(R"({"training": false})"));
  EXPECT_EQ(entry(ours, "explicit").at("inbound_nodes")[0].at("kwargs"), json::parse(R"({"training": true})"));
}

TEST(CallRecords, RecordedDefaultsAreNotReplayedExplicitArgumentsAre) {
  auto training_of = [](const std::string& model, const std::string& layer) {
    return model_from_config(record(model))->get_layer(layer)->inbound_nodes().at(0)->args.training;
  };
  EXPECT_FALSE(training_of("Dropout", "layer").has_value());  // so fit drops out
  EXPECT_FALSE(training_of("RandomFlip", "layer").has_value());
  EXPECT_EQ(training_of("Dropout_training_true", "layer"), std::optional<bool>(true));
  EXPECT_EQ(training_of("BatchNormalization_training_false", "layer"), std::optional<bool>(false));
  EXPECT_EQ(training_of("RandomFlip_training_false", "layer"), std::optional<bool>(false));
  EXPECT_EQ(training_of("nested_functional_training_false", "inner"), std::optional<bool>(false));
}

TEST(CallRecords, Keras2NodesKeepOnlyWhatTheCallerPassed) {
  EXPECT_EQ(keras2_kwargs(to_keras2(record("Dropout")), "layer"), json::object());
  EXPECT_EQ(keras2_kwargs(to_keras2(record("BatchNormalization")), "layer"), json::object());
  EXPECT_EQ(keras2_kwargs(to_keras2(record("RandomFlip")), "layer"), json::object());
  EXPECT_EQ(keras2_kwargs(to_keras2(record("nested_functional_two_inputs")), "inner"), json::object());
  EXPECT_EQ(keras2_kwargs(to_keras2(record("Dropout_training_true")), "layer"), json::parse(R"({"training": true})"));
  EXPECT_EQ(keras2_kwargs(to_keras2(record("BatchNormalization_training_false")), "layer"),
            json::parse(R"({"training": false})"));
  EXPECT_EQ(keras2_kwargs(to_keras2(record("nested_functional_training_false")), "inner"),
            json::parse(R"({"training": false})"));
}

TEST(CallRecords, Keras2ConfigsLeaveOutKeras315Keys) {
  const json k2 = to_keras2(record("Dense"));
  const json& dense = entry(k2, "layer").at("config");
  EXPECT_FALSE(dense.contains("quantization_config"));
  EXPECT_EQ(dense.at("kernel_initializer"), json::parse(R"({"class_name": "GlorotUniform", "config": {"seed": null}})"));
  const json& input = entry(k2, "x").at("config");
  EXPECT_FALSE(input.contains("optional"));
  EXPECT_EQ(input.at("ragged"), false);
  const json bn = entry(to_keras2(record("BatchNormalization")), "layer").at("config");
  for (const char* key : {"renorm", "renorm_clipping", "renorm_momentum"}) EXPECT_FALSE(bn.contains(key)) << key;
  // Axes Keras 2 cannot express are refused, not dropped.
  json axes = record("Dense");
  for (auto& e : axes["config"]["layers"])
    if (e["name"] == "layer") e["config"]["kernel_initializer"]["config"]["input_axes"] = json::array({0});
  expect_error<ValueError>([&] { to_keras2(axes); }, {"GlorotUniform", "input_axes", "[0]", ".keras"});
}

// Every recorded model saved here as .keras and .h5 loads back and predicts the same. With
// KERAS_FIXTURES_EXPORT=<dir> the files, inputs and outputs go there too, for
// `make_fixtures.py verify <dir>`: Keras 3 and tf_keras load them (the new keys, the recorded
// call defaults and their absence from Keras 2 nodes).
TEST(CallRecords, OurFilesLoadBackAndPredictTheSame) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("keras_call_records_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const char* out = std::getenv("KERAS_FIXTURES_EXPORT");
  for (const auto& [name, keras_object] : records().at("models").items()) {
    SCOPED_TRACE(name);
    auto model = model_from_config(keras_object);
    TensorList xs;
    for (size_t i = 0; i < model->inputs().size(); ++i) {
      Shape shape = model->inputs()[i].shape;
      shape[0] = 2;
      xs.push_back(random::uniform(shape, 0.0, 200.0, 7 + i).astype(model->inputs()[i].dtype));
    }
    const TensorList expected = model->predict(xs);
    // An explicit training argument wins here, while Keras's predict overrides it, and a seeded
    // Dropout draws other numbers in Keras: those models are compared here only.
    const bool exported = out && name.find("_training_") == std::string::npos;
    for (const std::string suffix : {".keras", ".h5"}) {
      const std::string path = (dir / ("call_" + name + suffix)).string();
      model->save(path);
      const TensorList back = load_model(path)->predict(xs);
      ASSERT_EQ(back.size(), expected.size()) << suffix;
      for (size_t i = 0; i < back.size(); ++i)
        EXPECT_EQ(back[i].to_vector<float>(), expected[i].to_vector<float>()) << suffix << " output " << i;
      if (exported) fs::copy_file(path, fs::path(out) / ("call_" + name + suffix), fs::copy_options::overwrite_existing);
    }
    if (!exported) continue;
    for (size_t i = 0; i < xs.size(); ++i)
      data::save_npy((fs::path(out) / ("call_" + name + ".input" + std::to_string(i) + ".npy")).string(), xs[i]);
    for (size_t i = 0; i < expected.size(); ++i)
      data::save_npy((fs::path(out) / ("call_" + name + ".output" + std::to_string(i) + ".npy")).string(), expected[i]);
  }
  fs::remove_all(dir);
}
