// keras::applications::NASNetMobile, NASNetLarge and InceptionResNetV2 against real Keras 3.15
// (tests/support/application_checks.h): config, layers and weights as Keras builds them (both
// lean on Keras's automatic names in creation order), pooling heads, Keras's argument checks and
// weight-file names, and the weights files Keras wrote for its module-level
// nasnet.NASNet(penultimate_filters=96, num_blocks=1, stem_block_filters=8, skip_reduction=False,
// default_size=224, input_shape=(32, 32, 3), classes=10) (tiny_nasnet) loaded by topology into
// detail::NASNet with the same arguments (preprocess_input: test_imagenet_utils.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "keras/applications/inception_resnet_v2.h"
#include "keras/applications/nasnet.h"
#include "keras/data/readers.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using namespace keras::testing::applications;
using keras::testing::expect_error;

namespace {

// tiny_nasnet's arguments to Keras's nasnet.NASNet.
const applications::detail::NASNetArchitecture kTinyNASNet = {.penultimate_filters = 96, .num_blocks = 1, .stem_block_filters = 8,
                                                .skip_reduction = false, .filter_multiplier = 2, .default_size = 224};

// KERAS_HOME pointed at an empty folder for the scope: Keras's download cache without files.
struct EmptyKerasHome {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "keras_home_empty_nasnet";
  EmptyKerasHome() { ::setenv("KERAS_HOME", dir.c_str(), 1); }
  ~EmptyKerasHome() { ::unsetenv("KERAS_HOME"); }
};

}  // namespace

TEST(NASNet, EveryVariantIsKeras) {
  expect_family_is_keras<NASNetOptions>({{"NASNetMobile", NASNetMobile}, {"NASNetLarge", NASNetLarge}}, {32, 32, 3});
}

TEST(NASNet, KerasDefaults) {
  auto mobile = NASNetMobile({.include_top = false, .pooling = "avg"});
  EXPECT_EQ(mobile->name(), "nasnet_mobile");
  // Keras's NASNetMobile fixes (224, 224, 3) without the top too, rather than any size.
  EXPECT_EQ(mobile->inputs()[0].shape, (Shape{-1, 224, 224, 3}));
  EXPECT_EQ(mobile->outputs()[0].shape, (Shape{-1, 1056}));
  EXPECT_EQ(mobile->layers().back()->name(), "global_average_pooling2d");
  EXPECT_EQ(applications::detail::NASNet({.input_shape = {32, 32, 3}, .classes = 10}, kTinyNASNet)->name(), "NASNet");
}

// Keras compares the static widths of a cell's two inputs to choose how to adjust the previous
// one: unknown widths count as equal, so with an unknown input size (NASNetLarge without the top
// and input_shape) it builds projections where the strided adjust belongs, and the model fails
// on real images. Keras 3.15 printed, for the tiny arguments at (None, None, 3) without the top:
// 334 layers, output (None, None, None, 96), 26894 parameters, and at predict "Dimensions must be
// equal, but are 3 and 7" in reduction_add_1_stem_2.
TEST(NASNet, UnknownSizeBuildsWhatKerasBuilds) {
  auto any = applications::detail::NASNet({.include_top = false, .input_shape = {-1, -1, 3}}, kTinyNASNet);
  EXPECT_EQ(any->layers().size(), 334u);
  EXPECT_EQ(any->outputs()[0].shape, (Shape{-1, -1, -1, 96}));
  EXPECT_EQ(any->count_params(), 26894);
  EXPECT_EQ(any->get_layer("adjust_conv_projection_stem_2")->class_name(), "Conv2D");
  EXPECT_THROW(any->predict(Tensor::zeros({1, 32, 32, 3})), ValueError);
}

TEST(NASNet, KerasArgumentChecks) {
  expect_error<ValueError>([] { NASNetMobile({.input_shape = {31, 32, 3}}); }, {"NASNetMobile", "at least 32x32"});
  expect_error<ValueError>([] { NASNetMobile({.include_top = true, .weights = "imagenet", .input_shape = {331, 331, 3}}); },
                           {"NASNetMobile", "(224, 224, 3)", "(331, 331, 3)"});
  expect_error<ValueError>([] { NASNetLarge({.weights = "imagenet", .classes = 10}); }, {"NASNetLarge", "classes 1000"});
  expect_error<ValueError>([] { NASNetLarge({.include_top = false, .weights = "imagenet", .input_shape = {-1, 64, 3}}); },
                           {"NASNetLarge", "static input_shape", "(None, 64, 3)"});
  expect_error<ValueError>([] { NASNetLarge({.weights = "nasnet.h5"}); }, {"NASNetLarge", "nasnet.h5"});
  auto arch = kTinyNASNet;
  arch.penultimate_filters = 100;
  expect_error<ValueError>([&] { applications::detail::NASNet({.input_shape = {32, 32, 3}}, arch); },
                           {"NASNet", "multiple of 24 * filter_multiplier^2 (96)", "got 100"});
  arch = kTinyNASNet;
  arch.default_size = 32;  // Keras has ImageNet weights for 224 and 331 only
  const EmptyKerasHome home;
  expect_error<ValueError>([&] { applications::detail::NASNet({.weights = "imagenet"}, arch); }, {"NASNet", "default size 32"});
}

// Keras's cache names the files apart from the URLs it fetches them from.
TEST(NASNet, ImagenetWeightsFromKerasCache) {
  const EmptyKerasHome home;
  const std::string url = "https://storage.googleapis.com/tensorflow/keras-applications/nasnet/";
  expect_error<IOError>([] { NASNetMobile({.weights = "imagenet"}); },
                        {(home.dir / "models" / "nasnet_mobile.h5").string(), url + "NASNet-mobile.h5"});
  expect_error<IOError>([] { NASNetMobile({.include_top = false, .weights = "imagenet"}); },
                        {"nasnet_mobile_no_top.h5", url + "NASNet-mobile-no-top.h5"});
  expect_error<IOError>([] { NASNetLarge({.weights = "imagenet"}); }, {"nasnet_large.h5", url + "NASNet-large.h5"});
  expect_error<IOError>([] { NASNetLarge({.include_top = false, .weights = "imagenet", .input_shape = {64, 64, 3}}); },
                        {"nasnet_large_no_top.h5", url + "NASNet-large-no-top.h5"});
}

// Keras's own nasnet.NASNet with tiny_nasnet's arguments: the same config, and its weights
// files (seeded random weights, BN statistics included) loaded by topology predict what Keras
// predicted (1e-5).
TEST(NASNet, LoadsKerasWeightsFilesByTopology) {
  const NASNetOptions options = {.input_shape = {32, 32, 3}, .classes = 10};
  expect_config_matches_keras(*applications::detail::NASNet(options, kTinyNASNet), "tiny_nasnet");
  for (const auto& [file, output] : std::vector<std::pair<std::string, std::string>>{
           {"tiny_nasnet.k2.weights_only.h5", "tiny_nasnet.k2.output0.npy"},
           {"tiny_nasnet.k2.h5", "tiny_nasnet.k2.output0.npy"},
           {"tiny_nasnet.weights.h5", "tiny_nasnet.k3.output0.npy"},
           {"tiny_nasnet.k3.h5", "tiny_nasnet.k3.output0.npy"}}) {
    if (!std::filesystem::exists(kDir + file)) GTEST_SKIP() << "no " << kDir + file;
    SCOPED_TRACE(file);
    NASNetOptions weighted = options;
    weighted.weights = kDir + file;
    auto m = applications::detail::NASNet(weighted, kTinyNASNet);
    const Tensor y = m->predict(data::load_npy(kDir + "tiny_nasnet.input0.npy")).contiguous();
    const Tensor k = data::load_npy(kDir + output).contiguous();
    ASSERT_EQ(y.shape(), k.shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      EXPECT_NEAR(y.data<float>()[i], k.data<float>()[i], 1e-5 + 1e-5 * std::abs(k.data<float>()[i])) << i;
  }
}

TEST(InceptionResNetV2, IsKerasInceptionResNetV2) {
  expect_family_is_keras<InceptionResNetV2Options>({{"InceptionResNetV2", InceptionResNetV2}}, {75, 75, 3});
  auto features = InceptionResNetV2({.include_top = false, .pooling = "max"});
  EXPECT_EQ(features->name(), "inception_resnet_v2");
  EXPECT_EQ(features->inputs()[0].shape, (Shape{-1, -1, -1, 3}));
  EXPECT_EQ(features->layers().back()->name(), "global_max_pooling2d");
  EXPECT_EQ(features->outputs()[0].shape, (Shape{-1, 1536}));
}

TEST(InceptionResNetV2, KerasArgumentChecks) {
  expect_error<ValueError>([] { InceptionResNetV2({.input_shape = {75, 74, 3}}); },
                           {"InceptionResNetV2", "at least 75x75"});
  expect_error<ValueError>([] { InceptionResNetV2({.weights = "imagenet", .input_shape = {75, 75, 3}}); },
                           {"InceptionResNetV2", "(299, 299, 3)"});
  // Pretrained classifiers keep softmax (any weights file: checked before it is read).
  expect_error<ValueError>(
      [] { InceptionResNetV2({.weights = kDir + "tiny_inception_resnet_v2.weights.h5", .classifier_activation = "relu"}); },
      {"InceptionResNetV2", "classifier_activation", "\"relu\""});
  const EmptyKerasHome home;
  const std::string url = "https://storage.googleapis.com/tensorflow/keras-applications/inception_resnet_v2/";
  expect_error<IOError>([] { InceptionResNetV2({.include_top = false, .weights = "imagenet"}); },
                        {url + "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels_notop.h5"});
  expect_error<IOError>([&] { InceptionResNetV2({.weights = "imagenet"}); },
                        {(home.dir / "models" / "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels.h5").string()});
}
