// Rescaling with a list scale (one factor per channel), as Keras's EfficientNet builds it for
// ImageNet weights: the layer harness, the config Keras 3.15 wrote for
// Rescaling([1 / math.sqrt(s) for s in (0.229, 0.224, 0.225)]) read and written back, the values
// Keras computed for it on ones, and the shape check.
#include <gtest/gtest.h>

#include "layers/layer_registry.h"
#include "layers/rescaling.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::expect_error;

TEST(RescalingChannels, Harness) {
  keras::testing::run_layer_harness(
      {.name = "Rescaling channel_scales",
       .make = [] { return LayerPtr(layers::Rescaling({.offset = 0.5, .channel_scales = {2.0, -1.0, 0.25}})); },
       .input_shape = {2, 4, 3},
       .weight_shapes = {}});
}

TEST(RescalingChannels, KerasConfigAndValues) {
  // Keras 3.15.1's get_config() of that layer, and its output on ones((1, 1, 1, 3)).
  const json keras_config = json::parse(R"({"name": "rescaling", "trainable": true, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "scale": [2.0896918976428642, 2.1128856368212916, 2.1081851067789197], "offset": 0.0})");
  const std::vector<float> keras_output = {2.0896919f, 2.1128857f, 2.108185f};
  LayerPtr layer = keras::layer_from_config("Rescaling", keras_config);
  const Tensor y = (*layer)(Tensor::ones({1, 1, 1, 3})).contiguous();
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], keras_output[static_cast<size_t>(i)]) << i;
  EXPECT_EQ(layer->get_config().at("scale"), keras_config.at("scale"));
  EXPECT_EQ(layers::Rescaling({.scale = 0.5})->get_config().at("scale"), json(0.5));  // a number stays one
}

TEST(RescalingChannels, Errors) {
  expect_error<ShapeError>([] { layers::Rescaling({.channel_scales = {1.0, 2.0}})(Tensor::ones({2, 3})); },
                           {"last axis has 2 entries", "(2, 3)"});
  expect_error<NotImplementedError>([] { keras::layer_from_config("Rescaling", json::parse(R"({"scale": [[1.0], [2.0]]})")); },
                                    {"Rescaling config 'scale'"});
}
