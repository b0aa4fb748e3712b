// keras::applications::ConvNeXtTiny/Small/Base/Large/XLarge against real Keras 3.15 (tests/support/
// application_checks.h): config (nested Sequential stem and downsampling blocks, operation-node
// residuals), layers and weights as Keras builds them at 32x32 with classes 10, pooling heads;
// Keras's weighted tiny fixtures, built by Keras's module-level convnext.ConvNeXt (here
// detail::ConvNeXt) with depths [1, 1, 2, 1] and, with StochasticDepth, drop_path_rate 0.1:
// their configs, and the weights files Keras wrote loaded by topology; Keras's argument checks
// and ImageNet file names; preprocess_input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "keras/applications/convnext.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;
namespace zoo = keras::applications::detail;

namespace {

// Keras's tiny_convnext: ConvNeXt(depths=[1,1,2,1], projection_dims=[8,16,24,32],
// name="convnext_tiny", input_shape=(32, 32, 3), classes=10).
std::shared_ptr<Model> tiny_convnext(const std::string& weights = "") {
  return zoo::ConvNeXt({.depths = {1, 1, 2, 1}, .projection_dims = {8, 16, 24, 32}},
                          {.weights = weights, .input_shape = {32, 32, 3}, .classes = 10, .name = "convnext_tiny"});
}
// Keras's tiny_convnext_stochastic_depth: depths [1,1,1,1], projection_dims 8, drop_path_rate 0.1,
// name "convnext_sd".
std::shared_ptr<Model> tiny_convnext_stochastic_depth(const std::string& weights = "") {
  return zoo::ConvNeXt({.depths = {1, 1, 1, 1}, .projection_dims = {8, 8, 8, 8}, .drop_path_rate = 0.1},
                          {.weights = weights, .input_shape = {32, 32, 3}, .classes = 10, .name = "convnext_sd"});
}

}  // namespace

TEST(ConvNeXt, IsKerasConvNeXt) {
  expect_family_is_keras<ConvNeXtOptions>({{"ConvNeXtTiny", ConvNeXtTiny},
                                           {"ConvNeXtSmall", ConvNeXtSmall},
                                           {"ConvNeXtBase", ConvNeXtBase},
                                           {"ConvNeXtLarge", ConvNeXtLarge},
                                           {"ConvNeXtXLarge", ConvNeXtXLarge}},
                                          {32, 32, 3});
}

// Keras's module-level builder: the tiny fixtures' configs, the second with StochasticDepth in the
// blocks whose linspace rate is not 0 (the first keeps its linear "identity" Activation).
TEST(ConvNeXt, ModuleBuilderIsKeras) {
  expect_config_matches_keras(*tiny_convnext(), "tiny_convnext");
  auto sd = tiny_convnext_stochastic_depth();
  expect_config_matches_keras(*sd, "tiny_convnext_stochastic_depth");
  EXPECT_EQ(sd->get_layer("convnext_sd_stage_0_block_0_identity")->class_name(), "Activation");
  EXPECT_EQ(sd->get_layer("convnext_sd_stage_3_block_0_stochastic_depth")->class_name(), "StochasticDepth");
  // layer_scale_init_value None: no LayerScale.
  auto plain = zoo::ConvNeXt({.depths = {1, 1, 1, 1}, .projection_dims = {8, 8, 8, 8}, .layer_scale_init_value = {}},
                                {.input_shape = {32, 32, 3}, .classes = 10});
  EXPECT_EQ(plain->name(), "convnext");
  for (const auto& l : plain->layers()) EXPECT_NE(l->class_name(), "LayerScale") << l->name();
}

// Keras's own options, against what Keras built for the same calls (tests/data/keras/
// applications/make_variants.py): no preprocessing, logits and a name that prefixes every layer;
// the features of a one-channel input (no Normalization then), ending in a LayerNormalization.
TEST(ConvNeXt, OptionsAreKeras) {
  expect_is_keras(*ConvNeXtTiny({.include_preprocessing = false, .input_shape = {32, 32, 3}, .classes = 5,
                                 .classifier_activation = "", .name = "my_convnext"}),
                  "variants/ConvNeXtTiny_options");
  expect_is_keras(*ConvNeXtTiny({.include_top = false, .input_shape = {32, 32, 1}}), "variants/ConvNeXtTiny_features");
}

// The features: pooling (or not) then a LayerNormalization, named as Keras's automatic names;
// no Normalization without preprocessing or without 3 channels.
TEST(ConvNeXt, FeaturesAndPreprocessing) {
  auto features = ConvNeXtTiny({.include_top = false, .input_shape = {64, 64, 3}});
  EXPECT_EQ(features->name(), "convnext_tiny");
  EXPECT_EQ(features->outputs()[0].shape, (Shape{-1, 2, 2, 768}));
  EXPECT_EQ(features->layers().back()->name(), "layer_normalization");
  auto pooled = ConvNeXtTiny({.include_top = false, .input_shape = {64, 64, 3}, .pooling = "max"});
  EXPECT_EQ(pooled->get_layer("global_max_pooling2d")->class_name(), "GlobalMaxPooling2D");
  auto any = ConvNeXtTiny({.include_top = false});
  EXPECT_EQ(any->inputs()[0].shape, (Shape{-1, -1, -1, 3}));
  EXPECT_EQ(any->get_layer(1)->class_name(), "Normalization");
  EXPECT_EQ(ConvNeXtTiny({.include_preprocessing = false, .input_shape = {32, 32, 3}})->get_layer(1)->name(),
            "convnext_tiny_stem");
  EXPECT_EQ(ConvNeXtTiny({.include_top = false, .input_shape = {32, 32, 1}})->get_layer(1)->name(), "convnext_tiny_stem");
}

TEST(ConvNeXt, KerasArgumentChecks) {
  expect_error<ValueError>([] { ConvNeXtTiny({.input_shape = {16, 16, 3}}); }, {"ConvNeXtTiny", "32"});
  expect_error<ValueError>([] { ConvNeXtSmall({.weights = "imagenet", .classes = 10}); },
                           {"ConvNeXtSmall", "classes 1000", "10"});
  expect_error<ValueError>([] { ConvNeXtBase({.weights = "imagenet", .input_shape = {64, 64, 3}}); },
                           {"ConvNeXtBase", "(224, 224, 3)"});
  expect_error<ValueError>([] { ConvNeXtTiny({.weights = "imagenet", .classifier_activation = "relu"}); },
                           {"ConvNeXtTiny", "relu"});
  // With "imagenet" the model name must contain the variant's, which names the file.
  expect_error<ValueError>([] { ConvNeXtLarge({.include_top = false, .weights = "imagenet", .name = "mine"}); },
                           {"ConvNeXtLarge", "convnext_large", "\"mine\""});
  expect_error<ValueError>(
      [] {
        zoo::ConvNeXt({.depths = {1, 1, 1, 1}, .projection_dims = {8, 8, 8, 8}, .weights_name = "convnext_tiny"},
                         {.include_top = false, .weights = "imagenet", .name = "convnext_tiny"});
      },
      {"ConvNeXtTiny", "depths [3, 3, 9, 3]", "got depths [1, 1, 1, 1]"});
  expect_error<ValueError>([] { zoo::ConvNeXt({.depths = {1, 1, 1}, .projection_dims = {8, 8, 8}}, {}); },
                           {"ConvNeXt", "4 stages", "[1, 1, 1]"});
}

// Keras's files, read from its download cache and never downloaded: <name>.h5 / <name>_notop.h5.
TEST(ConvNeXt, ImagenetFileNames) {
  const auto home = std::filesystem::temp_directory_path() / "keras_home_empty";
  ::setenv("KERAS_HOME", home.c_str(), 1);
  const std::string url = "https://storage.googleapis.com/tensorflow/keras-applications/convnext/";
  expect_error<IOError>([] { ConvNeXtTiny({.weights = "imagenet"}); },
                        {(home / "models" / "convnext_tiny.h5").string(), url + "convnext_tiny.h5"});
  expect_error<IOError>([] { ConvNeXtXLarge({.include_top = false, .weights = "imagenet", .input_shape = {32, 32, 3}}); },
                        {"convnext_xlarge_notop.h5"});
  expect_error<IOError>(
      [] { ConvNeXtSmall({.include_top = false, .weights = "imagenet", .name = "my_convnext_small_2"}); },
      {"my_convnext_small_2_notop.h5"});
  ::unsetenv("KERAS_HOME");
}

// The weights files tf_keras and Keras 3 wrote for the tiny fixtures (seeded random weights,
// LayerScale and LayerNorm included; tf_keras leaves the Sequential's name out of its weight
// names) loaded by topology: the models predict what Keras predicted on its pixels (1e-5).
TEST(ConvNeXt, LoadsKerasWeightsFilesByTopology) {
  expect_loads_keras_weights("tiny_convnext", [](const std::string& file) { return tiny_convnext(file); });
  expect_loads_keras_weights("tiny_convnext_stochastic_depth",
                             [](const std::string& file) { return tiny_convnext_stochastic_depth(file); });
}

// Keras's placeholder: the input itself.
TEST(ConvNeXt, PreprocessInputIsTheIdentity) {
  const Tensor x = Tensor::from_vector(std::vector<float>{0, 127.5f, 255}, {1, 1, 1, 3});
  const Tensor y = convnext::preprocess_input(x);
  EXPECT_EQ(y.data<float>(), x.data<float>());
  EXPECT_EQ(y.shape(), x.shape());
}
