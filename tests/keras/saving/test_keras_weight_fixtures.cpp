// The weight readers against the interop fixtures made by real Keras 3 and tf_keras
// (tests/data/keras/make_fixtures.py): each model is rebuilt here with the same layers, then
// every weights-bearing file is loaded and the predictions compared with Keras's own.
// Skipped when the fixtures are absent; KERAS_FIXTURES_DIR points elsewhere. With
// KERAS_FIXTURES_EXPORT=<dir>, the Keras 3 weights are also written back by our writers as
// <dir>/NAME.weights.h5 (tree) and <dir>/NAME_legacy.weights.h5 (Keras 2 layout), with the
// architecture, inputs and expected outputs beside them, for `make_fixtures.py verify <dir>`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "keras/utils/file_util.h"
#include "keras/saving/hdf5/hdf5.h"
#include "keras/keras.h"
#include "keras/saving/legacy_weights.h"
#include "keras/data/readers.h"
#include "layers/elementwise_merge.h"
#include "keras/saving/weights_h5_file.h"

namespace L = keras::layers;
using keras::KerasTensor;
using keras::Model;
using keras::Tensor;

namespace {

std::string fixtures_dir() {
  const char* env = std::getenv("KERAS_FIXTURES_DIR");
  return env ? env : std::string(KERAS_SOURCE_DIR) + "/tests/data/keras";
}

std::shared_ptr<Model> backbone(const std::string& name) {
  auto x = L::Input({12, 12, 3}, {.name = name + "_in"});
  auto y = L::Conv2D({.filters = 4, .kernel_size = 3, .name = name + "_conv"})(x);
  y = L::BatchNormalization({.name = name + "_bn"})(y);
  y = L::Activation({.activation = "relu", .name = name + "_relu"})(y);
  y = L::GlobalAveragePooling2D({.name = name + "_gap"})(y);
  y = L::Dense({.units = 8, .activation = "relu", .name = name + "_dense"})(y);
  return std::make_shared<Model>(x, y, name);
}

std::shared_ptr<Model> build(const std::string& which) {
  if (which == "mlp")
    return std::make_shared<keras::Sequential>(
        std::vector<keras::LayerPtr>{L::InputLayer({.shape = {8}}), L::Dense({.units = 16, .activation = "relu"}),
                                     L::Dropout({.rate = 0.25}), L::Dense({.units = 4, .activation = "softmax"})},
        "mlp");
  if (which == "cnn") {
    auto x = L::Input({12, 12, 3}, {.name = "image"});
    auto y = L::Conv2D({.filters = 8, .kernel_size = 3, .padding = "same", .name = "conv"})(x);
    y = L::BatchNormalization({.name = "bn"})(y);
    y = L::ReLU({.name = "relu"})(y);
    y = L::DepthwiseConv2D({.kernel_size = 3, .depth_multiplier = 2, .name = "dwconv"})(y);
    y = L::Activation({.activation = "tanh", .name = "act"})(y);
    y = L::SeparableConv2D(
        {.filters = 8, .kernel_size = 3, .padding = "same", .activation = "relu", .name = "sepconv"})(y);
    y = L::MaxPooling2D({.pool_size = 2, .name = "pool"})(y);
    y = L::GlobalAveragePooling2D({.name = "gap"})(y);
    return std::make_shared<Model>(x, L::Dense({.units = 4, .activation = "softmax", .name = "head"})(y), "cnn");
  }
  if (which == "two_inputs") {
    auto a = L::Input({6}, {.name = "in_a"});
    auto b = L::Input({6}, {.name = "in_b"});
    L::Dense shared({.units = 8, .activation = "tanh", .name = "shared"});
    auto sa = shared(a), sb = shared(b);
    auto cat = L::Concatenate({.name = "concat"})({sa, sb});
    auto add = L::Add({.name = "add"})({sa, sb});
    auto h = L::Concatenate({.name = "concat2"})({cat, add});
    return std::make_shared<Model>(std::vector<KerasTensor>{a, b},
                                   std::vector<KerasTensor>{L::Dense({.units = 3, .name = "out"})(h)}, "two_inputs");
  }
  if (which == "nested" || which == "nested_frozen") {
    auto bb = backbone("backbone");
    auto x = L::Input({12, 12, 3}, {.name = "image"});
    auto y = L::Dense({.units = 4, .activation = "softmax", .name = "head"})((*bb)(x));
    auto model = std::make_shared<Model>(x, y, which);
    if (which == "nested_frozen") {
      bb->get_layer("backbone_conv")->set_trainable(false);
      bb->get_layer("backbone_bn")->set_trainable(false);
    }
    return model;
  }
  if (which == "nested_seq") {
    auto inner = std::make_shared<keras::Sequential>(
        std::vector<keras::LayerPtr>{L::Dense({.units = 12, .activation = "relu", .name = "inner_dense"}),
                                     L::BatchNormalization({.name = "inner_bn"})},
        "inner");
    return std::make_shared<keras::Sequential>(
        std::vector<keras::LayerPtr>{L::InputLayer({.shape = {8}, .name = "x"}),
                                     L::Dense({.units = 10, .activation = "elu", .name = "pre"}), inner,
                                     L::Dense({.units = 4, .activation = "softmax", .name = "post"})},
        "nested_seq");
  }
  // frozen
  auto x = L::Input({8}, {.name = "x"});
  auto y = L::Dense({.units = 16, .activation = "relu", .name = "frozen_dense"})(x);
  y = L::BatchNormalization({.name = "frozen_bn"})(y);
  y = L::Dense({.units = 16, .activation = "sigmoid", .name = "dense"})(y);
  y = L::BatchNormalization({.name = "bn"})(y);
  auto model = std::make_shared<Model>(x, L::Dense({.units = 3, .activation = "softmax", .name = "head"})(y), "frozen");
  model->get_layer("frozen_dense")->set_trainable(false);
  model->get_layer("frozen_bn")->set_trainable(false);
  return model;
}

void expect_predicts(Model& model, const std::string& dir, const std::string& name, const std::string& gen,
                     const std::string& label) {
  keras::TensorList xs;
  for (int i = 0; std::filesystem::exists(dir + "/" + name + ".input" + std::to_string(i) + ".npy"); ++i)
    xs.push_back(keras::data::load_npy(dir + "/" + name + ".input" + std::to_string(i) + ".npy"));
  std::vector<float> want = keras::data::load_npy(dir + "/" + name + "." + gen + ".output0.npy").to_vector<float>();
  std::vector<float> got = model.predict(xs)[0].to_vector<float>();
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::abs(want[i])) << label << " " << i;
}

// Writes our files of a model holding Keras 3's weights, in make_fixtures.py verify's convention.
void export_for_verify(const Model& model, const std::string& dir, const std::string& name, const std::string& out) {
  namespace fs = std::filesystem;
  fs::create_directories(out);
  for (const std::string& stem : {name, name + "_legacy"}) {
    fs::copy_file(dir + "/" + name + ".k3.json", out + "/" + stem + ".json", fs::copy_options::overwrite_existing);
    for (int i = 0; fs::exists(dir + "/" + name + ".input" + std::to_string(i) + ".npy"); ++i)
      fs::copy_file(dir + "/" + name + ".input" + std::to_string(i) + ".npy",
                    out + "/" + stem + ".input" + std::to_string(i) + ".npy", fs::copy_options::overwrite_existing);
    fs::copy_file(dir + "/" + name + ".k3.output0.npy", out + "/" + stem + ".output0.npy",
                  fs::copy_options::overwrite_existing);
  }
  keras::save_weights_h5(model, out + "/" + name + ".weights.h5");
  auto file = keras::hdf5::File::create_in_memory(name + "_legacy.weights.h5");
  auto root = file.root();
  keras::write_legacy_weights(root, model);
  keras::write_file_atomic(out + "/" + name + "_legacy.weights.h5", file.image());
}

class KerasWeightFixtures : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(KerasWeightFixtures, LoadAndPredictLikeKeras) {
  const std::string dir = fixtures_dir();
  const std::string name = GetParam();
  if (!std::filesystem::exists(dir + "/" + name + ".k3.h5")) GTEST_SKIP() << "no fixtures in " << dir;
  struct Case {
    std::string file, gen;
  };
  for (const Case& c : {Case{name + ".weights.h5", "k3"}, Case{name + ".k3.h5", "k3"}, Case{name + ".k2.h5", "k2"},
                        Case{name + ".k2.weights.h5", "k2"}}) {
    const std::string path = dir + "/" + c.file;
    if (!std::filesystem::exists(path)) continue;
    auto model = build(name);
    model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
    keras::LoadReport report;
    ASSERT_NO_THROW(report = keras::load_weights_h5(*model, path)) << c.file;
    if (std::getenv("KERAS_FIXTURES_VERBOSE")) std::cout << c.file << ": " << report.str() << "\n";
    for (const auto& m : report.missing) EXPECT_EQ(m.rfind("adam", 0), 0u) << c.file << ": " << report.str();
    expect_predicts(*model, dir, name, c.gen, c.file);
    if (const char* out = std::getenv("KERAS_FIXTURES_EXPORT"); out && c.file == name + ".weights.h5")
      export_for_verify(*model, dir, name, out);
    // Full-model .h5 files carry the optimizer state too.
    auto root = keras::hdf5::File::open(path).root();
    if (root.has_group("optimizer_weights")) {
      auto fresh = build(name);
      fresh->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
      EXPECT_NO_THROW(keras::read_legacy_optimizer_weights(root.open_group("optimizer_weights"), *fresh->optimizer(),
                                                           *fresh))
          << c.file;
      EXPECT_GT(fresh->optimizer()->iterations(), 0) << c.file;
    } else if (root.has_group("optimizer")) {
      EXPECT_GT(model->optimizer()->iterations(), 0) << c.file << ": " << report.str();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, KerasWeightFixtures,
                         ::testing::Values("mlp", "cnn", "two_inputs", "nested", "nested_seq", "frozen", "nested_frozen"));
