// keras::applications::EfficientNetB0..B7 and EfficientNetV2B0..B3/S/M/L against real Keras
// 3.15 (tests/support/application_checks.h): config, layers and weights as Keras builds them,
// pooling heads, Keras's argument checks, the ImageNet stem (the extra Rescaling Keras adds for
// its files, read from Keras's cache), include_preprocessing, and the weights files Keras wrote
// for the tiny family members (Keras's own EfficientNet(0.1, 0.26) and EfficientNetV2(0.1, 0.2)
// builders, reached here through the same ad:: builders) loaded by topology.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "keras/applications/efficientnet.h"
#include "keras/applications/efficientnet_builder.h"
#include "keras/applications/efficientnet_v2.h"
#include "keras/data/readers.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;
namespace ad = keras::applications::detail;

TEST(EfficientNet, EveryVariantIsKeras) {
  expect_family_is_keras<EfficientNetOptions>(
      {{"EfficientNetB0", EfficientNetB0}, {"EfficientNetB1", EfficientNetB1}, {"EfficientNetB2", EfficientNetB2},
       {"EfficientNetB3", EfficientNetB3}, {"EfficientNetB4", EfficientNetB4}, {"EfficientNetB5", EfficientNetB5},
       {"EfficientNetB6", EfficientNetB6}, {"EfficientNetB7", EfficientNetB7}},
      {32, 32, 3});
}

TEST(EfficientNetV2, EveryVariantIsKeras) {
  expect_family_is_keras<EfficientNetV2Options>(
      {{"EfficientNetV2B0", EfficientNetV2B0}, {"EfficientNetV2B1", EfficientNetV2B1},
       {"EfficientNetV2B2", EfficientNetV2B2}, {"EfficientNetV2B3", EfficientNetV2B3},
       {"EfficientNetV2S", EfficientNetV2S}, {"EfficientNetV2M", EfficientNetV2M}, {"EfficientNetV2L", EfficientNetV2L}},
      {32, 32, 3});
}

namespace {

// Keras's efficientnet.EfficientNet(0.1, 0.26, 224, name="efficientnetb0", classes=10) and
// efficientnet_v2.EfficientNetV2(0.1, 0.2, 224, name="efficientnetv2-b0", b0 blocks,
// classes=10) at 32x32 (make_applications.py tiny_efficientnet, tiny_efficientnet_v2).
ad::Args tiny_args(const std::string& name, const std::string& weights) {
  return {.where = "EfficientNet", .weights = weights, .input_shape = {32, 32, 3}, .classes = 10, .name = name};
}
std::shared_ptr<Model> tiny_efficientnet(const std::string& weights = "") {
  return ad::EfficientNet(tiny_args("efficientnetb0", weights),
                              {.width_coefficient = 0.1, .depth_coefficient = 0.26, .weights_stem = "efficientnetb0"});
}
std::shared_ptr<Model> tiny_efficientnet_v2(const std::string& weights = "") {
  return ad::EfficientNetV2(tiny_args("efficientnetv2-b0", weights),
                                {.width_coefficient = 0.1, .depth_coefficient = 0.2, .blocks = "efficientnetv2-b0",
                                 .weights_stem = "efficientnetv2-b0"});
}

void expect_predicts_like_keras(Model& m, const std::string& stem, const std::string& output) {
  const Tensor y = m.predict(data::load_npy(kDir + stem + ".input0.npy")).contiguous();
  const Tensor k = data::load_npy(kDir + output).contiguous();
  ASSERT_EQ(y.shape(), k.shape());
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_NEAR(y.data<float>()[i], k.data<float>()[i], 1e-5 + 1e-5 * std::abs(k.data<float>()[i])) << i;
}

}  // namespace

TEST(EfficientNet, TinyFamilyMembersAreKeras) {
  expect_config_matches_keras(*tiny_efficientnet(), "tiny_efficientnet");
  expect_config_matches_keras(*tiny_efficientnet_v2(), "tiny_efficientnet_v2");
}

// The weights files tf_keras and Keras 3 wrote for the tiny members (seeded random weights,
// BN statistics and the B-series Normalization's mean and variance included) loaded by
// topology through `weights`: the models predict what Keras predicted (1e-5).
TEST(EfficientNet, LoadsKerasWeightsFilesByTopology) {
  for (const std::string stem : {"tiny_efficientnet", "tiny_efficientnet_v2"})
    for (const auto& [file, output] : std::vector<std::pair<std::string, std::string>>{
             {stem + ".k2.weights_only.h5", stem + ".k2.output0.npy"}, {stem + ".weights.h5", stem + ".k3.output0.npy"}}) {
      if (!std::filesystem::exists(kDir + file)) GTEST_SKIP() << "no " << kDir + file;
      SCOPED_TRACE(file);
      auto m = stem == "tiny_efficientnet" ? tiny_efficientnet(kDir + file) : tiny_efficientnet_v2(kDir + file);
      expect_predicts_like_keras(*m, stem, output);
    }
}

TEST(EfficientNet, KerasNamesAndPreprocessing) {
  EXPECT_EQ(EfficientNetB3({.include_top = false})->name(), "efficientnetb3");
  EXPECT_EQ(EfficientNetV2S({.include_top = false})->name(), "efficientnetv2-s");
  EXPECT_EQ(EfficientNetV2B0({.include_top = false, .name = "backbone"})->name(), "backbone");
  EXPECT_EQ(EfficientNetB0({.input_shape = {224, 224, 3}, .classes = 10})->outputs()[0].shape, (Shape{-1, 10}));
  EXPECT_EQ(EfficientNetB0()->inputs()[0].shape, (Shape{-1, 224, 224, 3}));   // default sizes
  EXPECT_EQ(EfficientNetV2M()->inputs()[0].shape, (Shape{-1, 480, 480, 3}));
  // Both preprocess_input functions hand back the very tensor (the model does the work).
  const Tensor x = Tensor::from_vector(std::vector<float>{0, 127, 255}, {1, 1, 1, 3});
  EXPECT_EQ(efficientnet::preprocess_input(x).raw_data(), x.raw_data());
  EXPECT_EQ(efficientnet_v2::preprocess_input(x, "channels_first").raw_data(), x.raw_data());
}

// Keras's include_preprocessing: off, the model starts at stem_conv; on, the -b variants
// normalise by ImageNet's statistics only with 3 channels, else rescale to [-1, 1].
TEST(EfficientNetV2, IncludePreprocessing) {
  auto names = [](const Model& m, size_t n) {
    std::vector<std::string> out;
    for (const auto& l : m.layers()) if (out.size() < n) out.push_back(l->name());
    return out;
  };
  auto bare = EfficientNetV2B0({.input_shape = {32, 32, 3}, .classes = 10, .include_preprocessing = false});
  EXPECT_EQ(names(*bare, 2), (std::vector<std::string>{"input_layer", "stem_conv"}));
  EXPECT_EQ(bare->count_params(), EfficientNetV2B0({.input_shape = {32, 32, 3}, .classes = 10})->count_params());
  auto gray = EfficientNetV2B1({.include_top = false, .input_shape = {32, 32, 1}});
  EXPECT_EQ(names(*gray, 3), (std::vector<std::string>{"input_layer", "rescaling", "stem_conv"}));
  const json c = gray->get_layer("rescaling")->get_config();
  EXPECT_DOUBLE_EQ(c.at("scale").get<double>(), 1.0 / 128);
  EXPECT_DOUBLE_EQ(c.at("offset").get<double>(), -1.0);
}

TEST(EfficientNet, KerasArgumentChecks) {
  expect_error<ValueError>([] { EfficientNetB0({.weights = "nope.h5"}); }, {"EfficientNetB0", "weights", "nope.h5"});
  expect_error<ValueError>([] { EfficientNetV2S({.weights = "imagenet", .classes = 2}); },
                           {"EfficientNetV2S", "classes 1000"});
  expect_error<ValueError>([] { EfficientNetB5({.input_shape = {32, 20, 3}}); }, {"EfficientNetB5", "at least 32x32"});
  expect_error<ValueError>([] { EfficientNetV2L({.weights = "imagenet", .input_shape = {64, 64, 3}}); },
                           {"EfficientNetV2L", "(480, 480, 3)"});
  const std::string file = kDir + "tiny_efficientnet.weights.h5";
  if (std::filesystem::exists(file))
    expect_error<ValueError>([&] {
      EfficientNetB0({.weights = file, .input_shape = {32, 32, 3}, .classes = 10, .classifier_activation = "relu"});
    }, {"EfficientNetB0", "relu"});
  expect_error<ValueError>([] { ad::efficientnet_v2_blocks("efficientnetv2-x"); }, {"efficientnetv2-x"});
}

// Keras's ImageNet files are read from its download cache, never downloaded: the names and
// URLs Keras uses, whatever the model's name.
TEST(EfficientNet, ImagenetFilesFromKerasCache) {
  const auto home = std::filesystem::temp_directory_path() / "keras_home_efficientnet_empty";
  ::setenv("KERAS_HOME", home.c_str(), 1);
  expect_error<IOError>([] { EfficientNetB0({.include_top = false, .weights = "imagenet", .name = "x"}); },
                        {"efficientnetb0_notop.h5", "https://storage.googleapis.com/keras-applications/efficientnetb0_notop.h5"});
  expect_error<IOError>([&] { EfficientNetB7({.weights = "imagenet"}); },
                        {(home / "models" / "efficientnetb7.h5").string()});
  expect_error<IOError>([] { EfficientNetV2S({.include_top = false, .weights = "imagenet"}); },
                        {"https://storage.googleapis.com/tensorflow/keras-applications/efficientnet_v2/"
                         "efficientnetv2-s_notop.h5"});
  expect_error<IOError>([] { EfficientNetV2B2({.weights = "imagenet"}); }, {"efficientnetv2-b2.h5"});
  ::unsetenv("KERAS_HOME");
}

// With "imagenet" Keras puts Rescaling(1/sqrt(ImageNet std)) after the Normalization (its
// files store the std where the variance belongs); the file, here one written for the same
// weighted layers, loads by topology around it.
TEST(EfficientNet, ImagenetStemAddsKerasRescaling) {
  const auto home = std::filesystem::temp_directory_path() / "keras_home_efficientnet";
  std::filesystem::create_directories(home / "models");
  auto plain = EfficientNetB0({.include_top = false, .input_shape = {32, 32, 3}});
  plain->get_layer("normalization")->weights()[0].assign(Tensor::from_vector(std::vector<float>{0.4f, 0.5f, 0.6f}));
  plain->get_layer("normalization")->weights()[1].assign(Tensor::from_vector(std::vector<float>{0.2f, 0.3f, 0.25f}));
  plain->save_weights((home / "models" / "efficientnetb0_notop.h5").string());
  ::setenv("KERAS_HOME", home.c_str(), 1);
  auto imagenet = EfficientNetB0({.include_top = false, .weights = "imagenet", .input_shape = {32, 32, 3}});
  ::unsetenv("KERAS_HOME");

  std::vector<std::string> expected, got;
  for (const auto& l : plain->layers()) expected.push_back(l->name());
  expected.insert(expected.begin() + 3, "rescaling_1");
  for (const auto& l : imagenet->layers()) got.push_back(l->name());
  EXPECT_EQ(got, expected);
  // Keras 3.15's config of that layer: Rescaling([1 / math.sqrt(s) for s in (0.229, 0.224, 0.225)]).
  const json c = imagenet->get_layer("rescaling_1")->get_config();
  expect_values(Tensor::from_vector(c.at("scale").get<std::vector<double>>()),
                {2.0896918976428642, 2.1128856368212916, 2.1081851067789197});
  EXPECT_EQ(c.at("offset").get<double>(), 0.0);
  const auto ours = imagenet->weights(), theirs = plain->weights();
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    const Tensor a = ours[i].value().contiguous(), b = theirs[i].value().contiguous();
    ASSERT_EQ(a.nbytes(), b.nbytes()) << ours[i].path();
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << ours[i].path();
  }
  // x * 1/255, normalised, then scaled per channel by Keras's factors.
  const Tensor x = Tensor::from_vector(std::vector<float>{51, 102, 204}, {1, 1, 1, 3});
  const Tensor y = imagenet->get_layer("rescaling_1")->operator()(plain->get_layer("normalization")->operator()(
      plain->get_layer("rescaling")->operator()(x)));
  const double in[] = {0.2, 0.4, 0.8}, mean[] = {0.4, 0.5, 0.6}, var[] = {0.2, 0.3, 0.25};
  const double scale[] = {2.0896918976428642, 2.1128856368212916, 2.1081851067789197};
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) want.push_back((in[i] - mean[i]) / std::sqrt(var[i]) * scale[i]);
  const Tensor yc = y.astype(DType::float64).contiguous();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(yc.data<double>()[i], want[i], 1e-5) << i;
}
