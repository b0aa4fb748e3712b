// The convolution layers through the layer harness, their Keras configs and weight layouts,
// and the bad-input errors that must name the layer and the shapes.
#include <gtest/gtest.h>

#include "backend/cpu/weight_cache.h"
#include "backend/ops_conv.h"
#include "layers/conv1d.h"
#include "layers/conv2d.h"
#include "layers/conv2d_transpose.h"
#include "layers/depthwise_conv2d.h"
#include "layers/initializers.h"
#include "layers/input_layer.h"
#include "layers/layer_registry.h"
#include "layers/separable_conv2d.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::run_layer_harness;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// ---------------- the harness over every conv layer ----------------

TEST(ConvHarness, Conv2D) {
  run_layer_harness({.name = "Conv2D 3x3 valid relu",
                     .make = [] { return LayerPtr(layers::Conv2D({.filters = 4, .kernel_size = 3, .activation = "relu"})); },
                     .input_shape = {2, 6, 5, 3},
                     .weight_shapes = {{3, 3, 3, 4}, {4}},
                     .gradcheck_input_shape = {1, 4, 4, 3}});
  run_layer_harness({.name = "Conv2D stride 2 same even kernel",
                     .make = [] {
                       return LayerPtr(layers::Conv2D({.filters = 3, .kernel_size = {2, 4}, .strides = 2, .padding = "same"}));
                     },
                     .input_shape = {2, 7, 5, 2},
                     .weight_shapes = {{2, 4, 2, 3}, {3}},
                     .gradcheck_input_shape = {1, 5, 5, 2}});
  run_layer_harness({.name = "Conv2D groups dilation no bias",
                     .make = [] {
                       return LayerPtr(layers::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same",
                                                       .dilation_rate = 2, .groups = 2, .use_bias = false}));
                     },
                     .input_shape = {2, 6, 6, 4},
                     .weight_shapes = {{3, 3, 2, 4}},
                     .gradcheck_input_shape = {1, 4, 4, 4}});
  run_layer_harness({.name = "Conv2D channels_first",
                     .make = [] {
                       return LayerPtr(layers::Conv2D({.filters = 2, .kernel_size = 2, .data_format = "channels_first"}));
                     },
                     .input_shape = {2, 3, 5, 4},
                     .weight_shapes = {{2, 2, 3, 2}, {2}},
                     .gradcheck_input_shape = {1, 3, 3, 3}});
}

TEST(ConvHarness, Conv1D) {
  run_layer_harness({.name = "Conv1D causal dilated tanh",
                     .make = [] {
                       return LayerPtr(layers::Conv1D({.filters = 3, .kernel_size = 3, .padding = "causal",
                                                       .dilation_rate = 2, .activation = "tanh"}));
                     },
                     .input_shape = {2, 9, 4},
                     .weight_shapes = {{3, 4, 3}, {3}},
                     .gradcheck_input_shape = {1, 6, 4}});
  run_layer_harness({.name = "Conv1D stride 2 same",
                     .make = [] { return LayerPtr(layers::Conv1D({.filters = 2, .kernel_size = 4, .strides = 2, .padding = "same"})); },
                     .input_shape = {3, 7, 2},
                     .weight_shapes = {{4, 2, 2}, {2}}});
}

TEST(ConvHarness, Conv2DTranspose) {
  run_layer_harness({.name = "Conv2DTranspose stride 2 valid",
                     .make = [] { return LayerPtr(layers::Conv2DTranspose({.filters = 3, .kernel_size = 3, .strides = 2})); },
                     .input_shape = {2, 3, 4, 2},
                     .weight_shapes = {{3, 3, 3, 2}, {3}},
                     .gradcheck_input_shape = {1, 2, 2, 2}});
  run_layer_harness({.name = "Conv2DTranspose same output_padding sigmoid",
                     .make = [] {
                       return LayerPtr(layers::Conv2DTranspose({.filters = 2, .kernel_size = {3, 2}, .strides = 2,
                                                                .padding = "same", .output_padding = layers::PairArg(1),
                                                                .activation = "sigmoid"}));
                     },
                     .input_shape = {2, 3, 3, 3},
                     .weight_shapes = {{3, 2, 2, 3}, {2}},
                     .gradcheck_input_shape = {1, 2, 2, 3}});
}

TEST(ConvHarness, DepthwiseConv2D) {
  run_layer_harness({.name = "DepthwiseConv2D dm 2 same stride 2",
                     .make = [] {
                       return LayerPtr(layers::DepthwiseConv2D({.kernel_size = 3, .strides = 2, .padding = "same",
                                                                .depth_multiplier = 2}));
                     },
                     .input_shape = {2, 7, 6, 3},
                     .weight_shapes = {{3, 3, 3, 2}, {6}},
                     .gradcheck_input_shape = {1, 4, 4, 3}});
}

TEST(ConvHarness, SeparableConv2D) {
  run_layer_harness({.name = "SeparableConv2D relu",
                     .make = [] {
                       return LayerPtr(layers::SeparableConv2D({.filters = 4, .kernel_size = 3, .padding = "same",
                                                                .depth_multiplier = 2, .activation = "relu"}));
                     },
                     .input_shape = {2, 5, 5, 3},
                     .weight_shapes = {{3, 3, 3, 2}, {1, 1, 6, 4}, {4}},
                     .gradcheck_input_shape = {1, 3, 3, 3}});
}

// ---------------- layer-specific behaviour ----------------

TEST(ConvLayers, KerasNamesAndConfigs) {
  layers::Conv2D conv({.filters = 8, .kernel_size = {3, 5}, .strides = {1, 2}, .padding = "same"});
  Tensor y = conv(Tensor::zeros({2, 9, 9, 3}));
  EXPECT_EQ(y.shape(), (Shape{2, 9, 5, 8}));
  EXPECT_EQ(conv->kernel().path(), "conv2d/kernel");
  EXPECT_EQ(conv->bias().path(), "conv2d/bias");
  json c = conv->get_config();
  EXPECT_EQ(c["kernel_size"], json::array({3, 5}));
  EXPECT_EQ(c["strides"], json::array({1, 2}));
  EXPECT_EQ(c["dilation_rate"], json::array({1, 1}));
  EXPECT_EQ(c["groups"], 1);
  EXPECT_EQ(c["data_format"], "channels_last");
  EXPECT_EQ(c["kernel_initializer"]["class_name"], "GlorotUniform");

  layers::DepthwiseConv2D dw({.kernel_size = 3, .depth_multiplier = 2});
  dw(Tensor::zeros({1, 5, 5, 4}));
  EXPECT_EQ(dw->kernel().path(), "depthwise_conv2d/kernel");
  EXPECT_EQ(dw->kernel().shape(), (Shape{3, 3, 4, 2}));
  layers::SeparableConv2D sep({.filters = 5, .kernel_size = 3});
  sep(Tensor::zeros({1, 5, 5, 4}));
  auto ws = sep->weights();
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(ws[0].path(), "separable_conv2d/depthwise_kernel");
  EXPECT_EQ(ws[1].path(), "separable_conv2d/pointwise_kernel");
  EXPECT_EQ(ws[2].path(), "separable_conv2d/bias");

  // A Keras 3 Conv1D config (tuples as 1-element lists) and a Keras 2 Conv2DTranspose config.
  json k3 = json::parse(R"({"name": "conv1d_3", "trainable": true, "dtype": "float32", "filters": 6,
     "kernel_size": [5], "strides": [1], "padding": "causal", "data_format": "channels_last",
     "dilation_rate": [2], "groups": 1, "activation": "relu", "use_bias": false,
     "kernel_initializer": {"module": "keras.initializers", "class_name": "HeNormal", "config": {"seed": 3}, "registered_name": null},
     "bias_initializer": "zeros", "kernel_regularizer": null, "bias_regularizer": null,
     "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null})");
  LayerPtr l1 = layer_from_config("Conv1D", k3);
  EXPECT_EQ(l1->name(), "conv1d_3");
  Tensor o1 = (*l1)(Tensor::zeros({2, 10, 3}));
  EXPECT_EQ(o1.shape(), (Shape{2, 10, 6}));
  EXPECT_EQ(l1->weights().size(), 1u);
  EXPECT_EQ(l1->get_config()["kernel_size"], json::array({5}));
  json k2 = json::parse(R"({"name": "deconv", "trainable": true, "dtype": "float32", "filters": 4,
     "kernel_size": [3, 3], "strides": [2, 2], "padding": "same", "output_padding": [1, 1],
     "data_format": "channels_last", "dilation_rate": [1, 1], "activation": "linear", "use_bias": true,
     "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
     "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": null,
     "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null})");
  LayerPtr l2 = layer_from_config("Conv2DTranspose", k2);
  EXPECT_EQ((*l2)(Tensor::zeros({1, 4, 5, 2})).shape(), (Shape{1, 8, 10, 4}));
  EXPECT_EQ(l2->weights()[0].shape(), (Shape{3, 3, 4, 2}));
  EXPECT_EQ(l2->get_config()["output_padding"], json::array({1, 1}));
  EXPECT_THROW(layer_from_config("Conv2D", json{{"kernel_size", 3}}), ValueError);
}

TEST(ConvLayers, SymbolicShapesWithUnknownSpatialExtents) {
  layers::Conv2D conv({.filters = 4, .kernel_size = 3, .strides = 2, .padding = "same"});
  EXPECT_EQ(conv(layers::Input({-1, 7, 3})).shape, (Shape{-1, -1, 4, 4}));
  layers::Conv2DTranspose t({.filters = 2, .kernel_size = 3, .strides = 2});
  EXPECT_EQ(t(layers::Input({-1, 4, 3})).shape, (Shape{-1, -1, 9, 2}));
}

TEST(ConvLayers, KernelLargerThanPaddedInputNamesLayerAndShapes) {
  layers::Conv2D conv({.filters = 2, .kernel_size = 5, .name = "big_kernel"});
  std::string m = message_of([&] { conv(Tensor::zeros({1, 4, 6, 3})); });
  EXPECT_TRUE(contains(m, "big_kernel")) << m;
  EXPECT_TRUE(contains(m, "Conv2D")) << m;
  EXPECT_TRUE(contains(m, "(1, 4, 6, 3)")) << m;
  EXPECT_TRUE(contains(m, "[5,5]")) << m;
  EXPECT_THROW(conv(Tensor::zeros({1, 4, 6, 3})), ShapeError);
  // Symbolic too, before any data flows.
  layers::Conv2D sym({.filters = 2, .kernel_size = 5, .name = "sym_conv"});
  std::string s = message_of([&] { sym(layers::Input({3, 8, 1})); });
  EXPECT_TRUE(contains(s, "sym_conv")) << s;
  EXPECT_TRUE(contains(s, "(None, 3, 8, 1)")) << s;
  // Same padding accepts it.
  EXPECT_EQ(layers::Conv2D({.filters = 2, .kernel_size = 5, .padding = "same"})(Tensor::zeros({1, 4, 6, 3})).shape(),
            (Shape{1, 4, 6, 2}));
  layers::Conv1D c1({.filters = 2, .kernel_size = 3, .dilation_rate = 3, .name = "dilated"});
  std::string d = message_of([&] { c1(Tensor::zeros({2, 6, 1})); });
  EXPECT_TRUE(contains(d, "dilated")) << d;
  EXPECT_TRUE(contains(d, "dilated extent 7")) << d;
  layers::DepthwiseConv2D dw({.kernel_size = 4, .name = "dw"});
  EXPECT_THROW(dw(Tensor::zeros({1, 3, 3, 2})), ShapeError);
}

TEST(ConvLayers, ChannelsNotDivisibleByGroupsNamesLayerAndShape) {
  layers::Conv2D conv({.filters = 4, .kernel_size = 1, .groups = 2, .name = "grouped"});
  std::string m = message_of([&] { conv(Tensor::zeros({1, 3, 3, 5})); });
  EXPECT_TRUE(contains(m, "grouped")) << m;
  EXPECT_TRUE(contains(m, "groups")) << m;
  EXPECT_TRUE(contains(m, "(1, 3, 3, 5)")) << m;
  EXPECT_THROW(conv(Tensor::zeros({1, 3, 3, 5})), ShapeError);
  EXPECT_THROW(layers::Conv2D({.filters = 5, .kernel_size = 1, .groups = 2}), ValueError);  // filters
  EXPECT_THROW(layers::Conv1D({.filters = 4, .kernel_size = 1, .groups = 4})(Tensor::zeros({1, 3, 6})), ShapeError);
}

TEST(ConvLayers, WrongRankAndChannelsNameLayer) {
  layers::Conv2D conv({.filters = 2, .kernel_size = 1, .name = "c2"});
  std::string m = message_of([&] { conv(Tensor::zeros({4, 4, 3})); });
  EXPECT_TRUE(contains(m, "c2")) << m;
  EXPECT_TRUE(contains(m, "rank 4")) << m;
  EXPECT_TRUE(contains(m, "(4, 4, 3)")) << m;
  EXPECT_THROW(conv(Tensor::zeros({4, 4, 3})), ShapeError);
  conv(Tensor::zeros({1, 4, 4, 3}));
  std::string c = message_of([&] { conv(Tensor::zeros({1, 4, 4, 2})); });
  EXPECT_TRUE(contains(c, "3 channels")) << c;
  EXPECT_TRUE(contains(c, "(1, 4, 4, 2)")) << c;
  EXPECT_THROW(layers::Conv1D({.filters = 2, .kernel_size = 1})(Tensor::zeros({1, 4, 4, 3})), ShapeError);
  EXPECT_THROW(layers::Conv2DTranspose({.filters = 2, .kernel_size = 1})(Tensor::zeros({1, 4, 3})), ShapeError);
  EXPECT_THROW(layers::SeparableConv2D({.filters = 2, .kernel_size = 1})(Tensor::zeros({1, 4, 3})), ShapeError);
}

TEST(ConvLayers, BadOptions) {
  EXPECT_THROW(layers::Conv2D({.filters = 0, .kernel_size = 3}), ValueError);
  EXPECT_THROW(layers::Conv2D({.filters = 2}), ValueError);  // no kernel_size
  EXPECT_THROW(layers::Conv2D({.filters = 2, .kernel_size = 3, .padding = "causal"}), ValueError);
  EXPECT_THROW(layers::Conv2D({.filters = 2, .kernel_size = 3, .strides = 2, .dilation_rate = 2}), ValueError);
  EXPECT_THROW(layers::Conv2D({.filters = 2, .kernel_size = 3, .data_format = "nhwc"}), ValueError);
  EXPECT_THROW(layers::Conv2DTranspose({.filters = 2, .kernel_size = 3, .strides = 2, .output_padding = layers::PairArg(2)}),
               ValueError);
  EXPECT_THROW(layers::DepthwiseConv2D({.kernel_size = 3, .depth_multiplier = 0}), ValueError);
  EXPECT_THROW(layers::Conv2D({.filters = 2, .kernel_size = 3, .kernel_constraint = "no_such_constraint"}), ValueError);
}
