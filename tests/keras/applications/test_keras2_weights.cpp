// Legacy weights-only HDF5 files written by tf_keras (Keras 2, as Keras's published
// *_weights_tf_dim_ordering_tf_kernels_notop.h5 files are), for include_top=False at the
// smallest input with every weight seeded random (BN statistics included), loaded by topology
// through `weights`: each model predicts what tf_keras predicted (1e-5 relative; 1e-4 absolute
// for the deep ones, whose float32 sums run long). The files are too large to commit: make them
// with make_keras2_weights.py and point KERAS_APPLICATIONS_KERAS2_DIR at them; otherwise skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "keras/applications/inception_resnet_v2.h"
#include "keras/applications/nasnet.h"
#include "keras/data/readers.h"
#include "keras/keras.h"

using namespace keras;
using namespace keras::applications;

namespace {

void expect_predicts_like_keras2(const std::string& name, const std::function<std::shared_ptr<Model>(const std::string&)>& build,
                                 double atol = 1e-4) {
  const char* dir = std::getenv("KERAS_APPLICATIONS_KERAS2_DIR");
  if (!dir) GTEST_SKIP() << "KERAS_APPLICATIONS_KERAS2_DIR unset (make_keras2_weights.py makes the files)";
  const std::string stem = std::string(dir) + "/" + name;
  if (!std::filesystem::exists(stem + ".k2.notop.h5")) GTEST_SKIP() << "no " << stem << ".k2.notop.h5";
  auto model = build(stem + ".k2.notop.h5");
  const Tensor y = model->predict(data::load_npy(stem + ".input.npy")).contiguous();
  const Tensor k = data::load_npy(stem + ".output.npy").contiguous();
  ASSERT_EQ(y.shape(), k.shape()) << name;
  int bad = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double a = y.data<float>()[i], b = k.data<float>()[i];
    if (!(std::abs(a - b) <= atol + 1e-5 * std::abs(b)) && bad++ < 3) ADD_FAILURE() << name << " " << i << ": " << a << " vs " << b;
  }
}

}  // namespace

TEST(Keras2Weights, VGG16) {
  expect_predicts_like_keras2("VGG16", [](const std::string& w) { return VGG16({.include_top = false, .weights = w, .input_shape = {32, 32, 3}}); });
}
TEST(Keras2Weights, ResNet50) {
  expect_predicts_like_keras2("ResNet50", [](const std::string& w) { return ResNet50({.include_top = false, .weights = w, .input_shape = {32, 32, 3}}); });
}
TEST(Keras2Weights, ResNet50V2) {
  expect_predicts_like_keras2("ResNet50V2", [](const std::string& w) { return ResNet50V2({.include_top = false, .weights = w, .input_shape = {32, 32, 3}}); });
}
TEST(Keras2Weights, DenseNet121) {
  expect_predicts_like_keras2("DenseNet121", [](const std::string& w) { return DenseNet121({.include_top = false, .weights = w, .input_shape = {32, 32, 3}}); });
}
TEST(Keras2Weights, MobileNetV2) {
  expect_predicts_like_keras2("MobileNetV2", [](const std::string& w) { return MobileNetV2({.input_shape = {32, 32, 3}, .include_top = false, .weights = w}); });
}
TEST(Keras2Weights, InceptionV3) {
  expect_predicts_like_keras2("InceptionV3", [](const std::string& w) { return InceptionV3({.include_top = false, .weights = w, .input_shape = {75, 75, 3}}); });
}
TEST(Keras2Weights, Xception) {
  expect_predicts_like_keras2("Xception", [](const std::string& w) { return Xception({.include_top = false, .weights = w, .input_shape = {71, 71, 3}}); });
}
TEST(Keras2Weights, NASNetMobile) {
  expect_predicts_like_keras2("NASNetMobile", [](const std::string& w) { return NASNetMobile({.include_top = false, .weights = w, .input_shape = {32, 32, 3}}); });
}
// The deepest of the zoo, with outputs up to ~95: tf_keras's own float32 output is up to 1.2e-4
// from the same model run in float64 (set_floatx("float64"), same file and input), so 3e-4.
TEST(Keras2Weights, NASNetLarge) {
  expect_predicts_like_keras2("NASNetLarge", [](const std::string& w) { return NASNetLarge({.include_top = false, .weights = w, .input_shape = {32, 32, 3}}); }, 3e-4);
}
TEST(Keras2Weights, InceptionResNetV2) {
  expect_predicts_like_keras2("InceptionResNetV2", [](const std::string& w) { return InceptionResNetV2({.include_top = false, .weights = w, .input_shape = {75, 75, 3}}); });
}
