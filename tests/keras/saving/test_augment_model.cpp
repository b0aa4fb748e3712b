// End to end: models with image preprocessing layers in front of a conv head.
//  - Ours: Input -> RandomFlip -> RandomRotation -> ... -> Conv2D, trained a step with the
//    augmentation active, saved to .keras and loaded back, predicts the same (inference: the
//    random layers are the identity).
//  - Keras's: tests/data/keras/augment.keras (every such layer, saved by real Keras 3 with
//    tests/data/keras/make_augment_model.py) loads and predicts Keras's outputs within 1e-5.
#include <gtest/gtest.h>

#include <filesystem>

#include "keras/keras.h"
#include "keras/saving/saving.h"

using namespace keras;
namespace L = keras::layers;

namespace {

const std::string kFixtures = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/";

std::filesystem::path temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("keras_augment_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST(AugmentModel, TrainsSavesAndLoadsWithTheSameInferenceOutputs) {
  set_random_seed(5);
  KerasTensor in = L::Input({12, 12, 3});
  KerasTensor x = L::RandomFlip({.mode = "horizontal", .seed = 1})(in);
  x = L::RandomRotation({.factor = 0.1, .fill_mode = "constant", .seed = 2})(x);
  x = L::RandomZoom({.height_factor = 0.2, .seed = 3})(x);
  x = L::RandomTranslation({.height_factor = 0.1, .width_factor = 0.1, .seed = 4})(x);
  x = L::RandomContrast({.factor = 0.2, .value_range = {0, 1}, .seed = 5})(x);
  x = L::RandomBrightness({.factor = 0.1, .value_range = {0, 1}, .seed = 6})(x);
  x = L::CenterCrop({.height = 10, .width = 10})(x);
  x = L::Resizing({.height = 8, .width = 8})(x);
  x = L::Conv2D({.filters = 4, .kernel_size = 3, .activation = "relu"})(x);
  x = L::GlobalAveragePooling2D()(x);
  KerasTensor out = L::Dense({.units = 3, .activation = "softmax"})(x);
  auto model = std::make_shared<Model>(in, out, "augmented");

  Tensor images = random::uniform({8, 12, 12, 3}, 0.0, 1.0, uint64_t{1});
  Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8});
  model->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  // Training calls the augmentation layers in training mode: the same model input gives other
  // activations than at inference.
  Tensor before = model->predict(images, {.verbose = 0});
  model->fit(images, labels, {.batch_size = 4, .epochs = 1, .verbose = 0});
  Tensor trained = model->predict(images, {.verbose = 0});
  EXPECT_NE(trained.to_vector<float>(), before.to_vector<float>());
  EXPECT_NE((*model)(images, {.training = true}).to_vector<float>(), trained.to_vector<float>());

  const std::string path = temp_path("augmented.keras").string();
  save_model(*model, path);
  auto loaded = load_model(path);
  EXPECT_EQ(loaded->predict(images, {.verbose = 0}).to_vector<float>(), trained.to_vector<float>());
  ASSERT_EQ(loaded->layers().size(), model->layers().size());
  for (size_t i = 0; i < model->layers().size(); ++i)
    EXPECT_EQ(loaded->layers()[i]->get_config(), model->layers()[i]->get_config()) << model->layers()[i]->name();
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(AugmentModel, KerasSavedModelPredictsLikeKeras) {
  auto model = load_model(kFixtures + "augment.keras");
  Tensor x = data::load_npy(kFixtures + "augment.input0.npy");
  auto expected = data::load_npy(kFixtures + "augment.output0.npy").to_vector<float>();
  auto got = model->predict(x, {.verbose = 0}).to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;
  std::vector<std::string> classes;
  for (const auto& l : model->layers()) classes.push_back(l->class_name());
  for (const char* cls : {"RandomFlip", "RandomRotation", "RandomZoom", "RandomTranslation", "RandomContrast",
                          "RandomBrightness", "RandomCrop", "CenterCrop", "Resizing"})
    EXPECT_NE(std::find(classes.begin(), classes.end(), cls), classes.end()) << cls;
}
