// The embedding, masking and 1-D shape layers as Keras 3 writes them: each config equals
// get_config() of real Keras 3 (tests/data/keras/sequence_basics.json), a model Input -> layer
// serializes as Keras's to_json() (build_config, node kwargs), and a text classifier
// Embedding(mask_zero) -> GlobalAveragePooling1D -> Dense predicts as Keras does for the same
// weights (padded or not) and loads back from our own .keras and .h5 files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "layers/layer_config.h"
#include "layers/cropping1d.h"
#include "layers/embedding.h"
#include "layers/identity.h"
#include "layers/masking.h"
#include "layers/permute.h"
#include "layers/repeat_vector.h"
#include "layers/up_sampling1d.h"
#include "layers/zero_padding1d.h"
#include "tests/support/application_checks.h"
#include "tests/support/sequence_reference.h"

using namespace keras;
using keras::testing::applications::json_differences;
namespace ref = keras::testing::sequence;

namespace {

void expect_same_json(const json& ours, const json& keras, const std::string& what) {
  std::vector<std::string> diffs;
  json_differences(ours, keras, "", diffs);
  for (const auto& d : diffs) ADD_FAILURE() << what << d;
}

// Our layer for the case names of the configs section, built from C++ options.
LayerPtr layer_for(const std::string& name) {
  if (name == "Embedding") return layers::Embedding({.input_dim = 10, .output_dim = 4, .name = "layer"});
  if (name == "Embedding_mask_zero")
    return layers::Embedding({.input_dim = 10, .output_dim = 4, .mask_zero = true, .name = "layer"});
  if (name == "Embedding_options")
    return layers::Embedding({.input_dim = 7,
                              .output_dim = 3,
                              .embeddings_initializer = std::make_shared<initializers::RandomNormal>(0.0, 0.5, 3),
                              .embeddings_regularizer = std::make_shared<regularizers::L2>(0.01),
                              .embeddings_constraint = std::make_shared<constraints::MaxNorm>(2.0),
                              .name = "layer"});
  if (name == "Masking") return layers::Masking({.name = "layer"});
  if (name == "Masking_value") return layers::Masking({.mask_value = -1.5, .name = "layer"});
  if (name == "RepeatVector") return layers::RepeatVector({.n = 3, .name = "layer"});
  if (name == "Permute") return layers::Permute({.dims = {2, 1}, .name = "layer"});
  if (name == "Permute_3d") return layers::Permute({.dims = {3, 1, 2}, .name = "layer"});
  if (name == "Cropping1D") return layers::Cropping1D({.name = "layer"});
  if (name == "Cropping1D_pair") return layers::Cropping1D({.cropping = {2, 0}, .name = "layer"});
  if (name == "ZeroPadding1D") return layers::ZeroPadding1D({.name = "layer"});
  if (name == "ZeroPadding1D_pair") return layers::ZeroPadding1D({.padding = {0, 2}, .name = "layer"});
  if (name == "UpSampling1D") return layers::UpSampling1D({.name = "layer"});
  if (name == "UpSampling1D_3") return layers::UpSampling1D({.size = 3, .name = "layer"});
  if (name == "Identity") return layers::Identity({.name = "layer"});
  return nullptr;
}

// A layer config as a Keras 3 file holds it: the dtype as a DTypePolicy object (serialize_model
// wraps it so; ModelsSerializeAsKeras3WritesThem checks that part).
json as_keras3(json c) {
  c["dtype"] = config::keras_object("keras", "DTypePolicy", {{"name", c.at("dtype")}});
  return c;
}

std::string temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("keras_seq_configs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

TEST(SequenceConfigs, EveryConfigIsKeras3sGetConfig) {
  ASSERT_TRUE(ref::reference().is_object()) << "tests/data/keras/sequence_basics.json";
  const json& configs = ref::reference().at("configs");
  ASSERT_EQ(configs.size(), 15u);
  for (const auto& [name, entry] : configs.items()) {
    SCOPED_TRACE(name);
    LayerPtr ours = layer_for(name);
    ASSERT_TRUE(ours) << "no C++ form for " << name;
    EXPECT_EQ(ours->class_name(), entry.at("class_name"));
    expect_same_json(as_keras3(ours->get_config()), entry.at("config"), name + " C++ options");
    // And read back from Keras's own config.
    LayerPtr read = layer_from_config(entry.at("class_name"), entry.at("config"));
    expect_same_json(as_keras3(read->get_config()), entry.at("config"), name + " from Keras's config");
  }
}

TEST(SequenceConfigs, Keras2ConfigsReadAsTheSameLayers) {
  // tf_keras writes tuples, Keras 2 initializer objects and input_length; read, each gives the
  // config of the same layer made in Keras 3.
  const json& configs_k2 = ref::reference().at("configs_k2");
  ASSERT_EQ(configs_k2.size(), 9u);
  for (const auto& [name, entry] : configs_k2.items()) {
    SCOPED_TRACE(name);
    LayerPtr read = layer_from_config(entry.at("class_name"), entry.at("config"));
    expect_same_json(as_keras3(read->get_config()), ref::reference().at("configs").at(name).at("config"), name + " from tf_keras");
  }
}

TEST(SequenceConfigs, ModelsSerializeAsKeras3WritesThem) {
  const json& models = ref::reference().at("models");
  ASSERT_EQ(models.size(), 9u);
  for (const auto& [name, keras_object] : models.items()) {
    SCOPED_TRACE(name);
    json keras = keras_object;
    keras.erase("compile_config");
    expect_same_json(serialize_model(*model_from_config(keras)), keras, name);
  }
}

namespace {

// Input(int32, (None,)) -> Embedding(12, 4, mask_zero) -> GlobalAveragePooling1D -> Dense(3 softmax).
std::shared_ptr<Model> text_classifier() {
  auto tokens = Input({-1}, {.dtype = "int32", .name = "tokens"});
  auto h = layers::Embedding({.input_dim = 12, .output_dim = 4, .mask_zero = true, .name = "embedding"})(tokens);
  h = layers::GlobalAveragePooling1D({.name = "pool"})(h);
  auto out = layers::Dense({.units = 3, .activation = "softmax", .name = "classifier"})(h);
  return std::make_shared<Model>(tokens, out, "text_classifier");
}

}  // namespace

TEST(SequenceConfigs, TextClassifierPredictsAsKerasAndPaddingChangesNothing) {
  const json& keras = ref::reference().at("text_classifier");
  auto model = text_classifier();
  model->set_weights(ref::tensors_of(keras.at("weights")));
  Tensor tokens = ref::tensor_of(keras.at("inputs")[0]);
  ref::expect_matches(model->predict(tokens), keras.at("outputs")[0], "padded batch");
  // Each row alone, without its zeros, predicts what Keras predicts for it (and what it predicts
  // inside the padded batch).
  const std::vector<int64_t> lengths = {3, 1, 6};
  for (size_t i = 0; i < lengths.size(); ++i) {
    Tensor row = ops::slice(tokens, {static_cast<int64_t>(i), 0}, {1, lengths[i]});
    ref::expect_matches(model->predict(row), keras.at("unpadded_outputs")[i], "row " + std::to_string(i) + " unpadded");
  }
}

TEST(SequenceConfigs, TextClassifierSavesAndLoadsBackInBothFormats) {
  const json& keras = ref::reference().at("text_classifier");
  auto model = text_classifier();
  model->set_weights(ref::tensors_of(keras.at("weights")));
  Tensor tokens = ref::tensor_of(keras.at("inputs")[0]);
  const std::vector<float> before = model->predict(tokens).to_vector<float>();
  // KERAS_SEQUENCE_DUMP=DIR keeps the files, with their input and output, for
  // `make_fixtures.py verify DIR` (real Keras loads them and compares predictions).
  const char* dump = std::getenv("KERAS_SEQUENCE_DUMP");
  const std::string dir = dump ? std::string(dump) : temp_dir();
  if (dump) {
    data::save_npy(dir + "/text_classifier.input0.npy", tokens);
    data::save_npy(dir + "/text_classifier.output0.npy", model->predict(tokens));
  }
  for (const char* file : {"text_classifier.keras", "text_classifier.h5"}) {
    SCOPED_TRACE(file);
    const std::string path = dir + "/" + file;
    save_model(*model, path);
    auto loaded = load_model(path);
    ASSERT_EQ(loaded->get_layer("embedding")->class_name(), "Embedding");
    EXPECT_TRUE(loaded->get_layer("embedding")->get_config().at("mask_zero").get<bool>());
    EXPECT_EQ(loaded->predict(tokens).to_vector<float>(), before);
    ref::expect_matches(loaded->predict(tokens), keras.at("outputs")[0], "loaded");
  }
  if (!dump) std::filesystem::remove_all(dir);
}
