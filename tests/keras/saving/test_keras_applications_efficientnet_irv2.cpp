// The weighted members of the families that need Normalization, Dropout's noise_shape and
// CustomScaleLayer (tiny_efficientnet, tiny_efficientnet_v2, tiny_inception_resnet_v2 in
// tests/data/keras/applications): the files we write hold the weights exactly as the files Keras
// wrote (HDF5 paths, shapes, dtypes: EfficientNet's Normalization count is an int64 scalar at
// vars/2), and the whole model fine-tunes with noise-shape Dropout active while Normalization's
// statistics stay as loaded. Loading and predicting: test_keras_applications_weights.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <unistd.h>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "tests/support/applications_fixtures.h"

namespace fs = std::filesystem;
using namespace keras;
using namespace keras::testing::applications;

namespace {

// "path shape dtype" of every weight a file holds, in the file's order.
std::vector<std::string> weight_layout(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& w : inspect_file(path)["weights"])
    out.push_back(w["path"].get<std::string>() + " " + w["shape"].dump() + " " + w["dtype"].get<std::string>());
  return out;
}

class NormScaleFamily : public ::testing::TestWithParam<std::string> {
 protected:
  std::string stem() const { return GetParam(); }
};

TEST_P(NormScaleFamily, OurFilesHoldTheWeightsAsKerasFilesDo) {
  auto model = load_model(kDir + stem() + ".keras");
  const fs::path dir = fs::temp_directory_path() / ("keras_apps_layout_" + stem() + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string ours = (dir / stem()).string();
  model->save(ours + ".keras");
  model->save(ours + ".h5");
  model->save_weights(ours + ".weights.h5");
  EXPECT_EQ(weight_layout(ours + ".weights.h5"), weight_layout(kDir + stem() + ".weights.h5"));
  EXPECT_EQ(weight_layout(ours + ".keras"), weight_layout(kDir + stem() + ".keras"));
  EXPECT_EQ(weight_layout(ours + ".h5"), weight_layout(kDir + stem() + ".k3.h5"));
  fs::remove_all(dir);
}

// Fine-tuning the whole model (training=True in fit): noise-shape Dropout draws its per-sample
// masks, gradients flow through Normalization and CustomScaleLayer, and Normalization's
// non-trainable statistics are left exactly as loaded.
TEST_P(NormScaleFamily, FineTunesEndToEndWithNormalizationStatisticsFixed) {
  auto model = load_model(kDir + stem() + ".keras");
  const Tensor x = data::load_npy(kDir + stem() + ".input0.npy");
  const Tensor y = Tensor::from_vector(std::vector<int64_t>{3, 7});
  std::vector<std::pair<std::string, TensorList>> stats;
  for (const auto& l : model->layers())
    if (l->class_name() == "Normalization") stats.emplace_back(l->name(), l->get_weights());
  const Variable kernel = model->trainable_weights().front();
  const std::vector<float> kernel_before = kernel.value().to_vector<float>();
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}), .loss = "sparse_categorical_crossentropy"});
  auto history = model->fit(x, y, {.batch_size = 2, .epochs = 2, .verbose = 0});
  for (double loss : history["loss"]) EXPECT_TRUE(std::isfinite(loss));
  for (const auto& [name, before] : stats) {
    const TensorList after = model->get_layer(name)->get_weights();
    for (size_t i = 0; i < before.size(); ++i)
      EXPECT_EQ(after[i].to_vector<double>(), before[i].to_vector<double>()) << name << " weight " << i;
  }
  EXPECT_NE(kernel.value().to_vector<float>(), kernel_before) << kernel.path() << " was not trained";
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Zoo, NormScaleFamily,
                         ::testing::Values("tiny_efficientnet", "tiny_efficientnet_v2", "tiny_inception_resnet_v2"),
                         test_name);

}  // namespace
