// keras::applications::imagenet_utils and every family's preprocess_input against values
// printed by real Keras 3.15.1 (TensorFlow backend, CPU):
//   x = np.array([[[[0, 127.5, 255], [10, 20, 30]], [[200, 100, 50], [1, 2, 3]]]], "float32")
//   t = keras.ops.convert_to_tensor(x)
//   keras.applications.imagenet_utils.preprocess_input(t, mode=m)                  (m: caffe, tf, torch)
//   ...preprocess_input(convert_to_tensor(x.transpose(0, 3, 1, 2)), mode=m, data_format="channels_first")
// and correct_pad / obtain_input_shape as Keras's functions compute them (below).
#include <gtest/gtest.h>

#include "keras/applications/inception_resnet_v2.h"
#include "keras/applications/nasnet.h"
#include "keras/keras.h"
#include "tests/support/application_checks.h"
#include "tests/support/expect_error.h"

using namespace keras;
using namespace keras::applications;
using keras::testing::expect_error;
using keras::testing::applications::expect_values;

namespace {

Tensor pixels() {
  return Tensor::from_vector(std::vector<float>{0, 127.5, 255, 10, 20, 30, 200, 100, 50, 1, 2, 3}, {1, 2, 2, 3});
}
const std::vector<double> kCaffe = {151.06100463867188, 10.721000671386719, -123.68000030517578, -73.93900299072266,
                                    -96.77899932861328, -113.68000030517578, -53.939002990722656, -16.77899932861328,
                                    76.31999969482422, -100.93900299072266, -114.77899932861328, -122.68000030517578};
const std::vector<double> kTf = {-1.0, 0.0, 1.0, -0.9215686321258545, -0.843137264251709, -0.7647058963775635,
                                 0.5686274766921997, -0.21568626165390015, -0.6078431606292725, -0.9921568632125854,
                                 -0.9843137264251709, -0.9764705896377563};
const std::vector<double> kTorch = {-2.1179039478302, 0.1964285671710968, 2.640000104904175, -1.9466564655303955,
                                    -1.6855741739273071, -1.2815686464309692, 1.3070467710494995, -0.28501397371292114,
                                    -0.9329847097396851, -2.1007792949676514, -2.0007002353668213, -1.7521568536758423};

}  // namespace

TEST(ImagenetUtils, PreprocessModesAsKeras) {
  using imagenet_utils::preprocess_input;
  expect_values(preprocess_input(pixels()), kCaffe);  // Keras's default mode
  expect_values(preprocess_input(pixels(), {.mode = "tf"}), kTf);
  expect_values(preprocess_input(pixels(), {.mode = "torch"}), kTorch);
  EXPECT_EQ(preprocess_input(pixels(), {.mode = "torch"}).dtype(), DType::float32);
  // Integer pixels become float32 (Keras's NumPy path); float64 stays float64.
  expect_values(preprocess_input(pixels().astype(DType::int32), {.mode = "tf"}),
                {-1.0, -0.003921568393707275, 1.0, -0.9215686321258545, -0.843137264251709,
                 -0.7647058963775635, 0.5686274766921997, -0.21568626165390015, -0.6078431606292725,
                 -0.9921568632125854, -0.9843137264251709, -0.9764705896377563});
  EXPECT_EQ(preprocess_input(pixels().astype(DType::float64), {.mode = "caffe"}).dtype(), DType::float64);
}

TEST(ImagenetUtils, PreprocessChannelsFirstAsKeras) {
  using imagenet_utils::preprocess_input;
  const Tensor nchw = ops::transpose(pixels(), {0, 3, 1, 2});
  expect_values(preprocess_input(nchw, {.mode = "caffe", .data_format = "channels_first"}),
                {151.06100463867188, -73.93900299072266, -53.939002990722656, -100.93900299072266, 10.721000671386719,
                 -96.77899932861328, -16.77899932861328, -114.77899932861328, -123.68000030517578, -113.68000030517578,
                 76.31999969482422, -122.68000030517578});
  expect_values(preprocess_input(nchw, {.mode = "torch", .data_format = "channels_first"}),
                {-2.1179039478302, -1.9466564655303955, 1.3070467710494995, -2.1007792949676514, 0.1964285671710968,
                 -1.6855741739273071, -0.28501397371292114, -2.0007002353668213, 2.640000104904175,
                 -1.2815686464309692, -0.9329847097396851, -1.7521568536758423});
  // One image (3-D) works in both layouts.
  expect_values(preprocess_input(pixels().view({2, 2, 3})), kCaffe);
}

TEST(ImagenetUtils, EveryFamilyUsesKerasMode) {
  expect_values(vgg16::preprocess_input(pixels()), kCaffe);
  expect_values(vgg19::preprocess_input(pixels()), kCaffe);
  expect_values(resnet::preprocess_input(pixels()), kCaffe);
  expect_values(resnet50::preprocess_input(pixels()), kCaffe);
  expect_values(resnet_v2::preprocess_input(pixels()), kTf);
  expect_values(mobilenet::preprocess_input(pixels()), kTf);
  expect_values(mobilenet_v2::preprocess_input(pixels()), kTf);
  expect_values(inception_v3::preprocess_input(pixels()), kTf);
  expect_values(xception::preprocess_input(pixels()), kTf);
  expect_values(densenet::preprocess_input(pixels()), kTorch);
  expect_values(nasnet::preprocess_input(pixels()), kTf);
  expect_values(inception_resnet_v2::preprocess_input(pixels()), kTf);
}

TEST(ImagenetUtils, PreprocessErrors) {
  using imagenet_utils::preprocess_input;
  expect_error<ValueError>([] { preprocess_input(pixels(), {.mode = "keras"}); }, {"preprocess_input", "mode", "\"keras\""});
  expect_error<ValueError>([] { preprocess_input(pixels(), {.data_format = "nhwc"}); }, {"data_format", "\"nhwc\""});
  expect_error<ValueError>([] { preprocess_input(Tensor::zeros({1, 4, 4, 1})); }, {"3 channels", "(1, 4, 4, 1)"});
  EXPECT_EQ(preprocess_input(Tensor::zeros({1, 4, 4, 1}), {.mode = "tf"}).shape(), (Shape{1, 4, 4, 1}));  // any shape
}

// keras.src.applications.imagenet_utils.correct_pad(keras.Input(shape), k) for (7, 8, 3), 3:
// ((1, 1), (0, 1)); (None, None, 3), 3: ((0, 1), (0, 1)); (9, 9, 3), 5: ((2, 2), (2, 2)).
TEST(ImagenetUtils, CorrectPad) {
  using P = std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>>;
  EXPECT_EQ(imagenet_utils::correct_pad({-1, 7, 8, 3}, 3), (P{{1, 1}, {0, 1}}));
  EXPECT_EQ(imagenet_utils::correct_pad({-1, -1, -1, 3}, 3), (P{{0, 1}, {0, 1}}));
  EXPECT_EQ(imagenet_utils::correct_pad({-1, 9, 9, 3}, 5), (P{{2, 2}, {2, 2}}));
}

// obtain_input_shape(None, 224, 32, "channels_last", True, None) == (224, 224, 3); with False
// (None, None, 3); ((40, 50, 1), ..., True, None) == (40, 50, 1); ((None, 50, 3), ..., False,
// "imagenet") == (None, 50, 3).
TEST(ImagenetUtils, ObtainInputShape) {
  using imagenet_utils::obtain_input_shape;
  EXPECT_EQ(obtain_input_shape("m", {}, 224, 32, true, false), (Shape{224, 224, 3}));
  EXPECT_EQ(obtain_input_shape("m", {}, 224, 32, false, false), (Shape{-1, -1, 3}));
  EXPECT_EQ(obtain_input_shape("m", {}, 299, 75, true, true), (Shape{299, 299, 3}));
  EXPECT_EQ(obtain_input_shape("m", {40, 50, 1}, 224, 32, true, false), (Shape{40, 50, 1}));
  EXPECT_EQ(obtain_input_shape("m", {-1, 50, 3}, 224, 32, false, true), (Shape{-1, 50, 3}));
  expect_error<ValueError>([] { obtain_input_shape("m", {40, 50, 1}, 224, 32, false, true); }, {"m", "3 channels"});
}
