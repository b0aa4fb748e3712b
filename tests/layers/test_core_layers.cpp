#include <gtest/gtest.h>

#include "layers/activation.h"
#include "layers/dense.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/initializers.h"
#include "layers/input_layer.h"
#include "layers/layer_registry.h"
#include "layers/reshape.h"
#include "support/expect_error.h"
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

// ---------------- the harness over every core layer ----------------

TEST(CoreLayersHarness, Dense) {
  run_layer_harness({.name = "Dense linear",
                     .make = [] { return LayerPtr(layers::Dense({.units = 4})); },
                     .input_shape = {3, 5},
                     .weight_shapes = {{5, 4}, {4}}});
}

TEST(CoreLayersHarness, DenseReluNoBias) {
  run_layer_harness({.name = "Dense relu, no bias",
                     .make = [] { return LayerPtr(layers::Dense({.units = 3, .activation = "relu", .use_bias = false})); },
                     .input_shape = {4, 6},
                     .weight_shapes = {{6, 3}},
                     .gradcheck_input_shape = {2, 6}});
}

TEST(CoreLayersHarness, DenseOnRank3WithTanhAndSeededInit) {
  run_layer_harness({.name = "Dense tanh rank 3",
                     .make = [] {
                       return LayerPtr(layers::Dense({.units = 2, .activation = "tanh",
                                                      .kernel_initializer = std::make_shared<initializers::HeNormal>(3),
                                                      .bias_initializer = "ones"}));
                     },
                     .input_shape = {2, 3, 4},
                     .weight_shapes = {{4, 2}, {2}}});
}

TEST(CoreLayersHarness, Activation) {
  for (const char* act : {"relu", "tanh", "sigmoid", "softmax", "hard_silu"}) {
    run_layer_harness({.name = std::string("Activation ") + act,
                       .make = [act] { return LayerPtr(layers::Activation({.activation = act})); },
                       .input_shape = {3, 4},
                       .weight_shapes = {}});
  }
}

TEST(CoreLayersHarness, Dropout) {
  run_layer_harness({.name = "Dropout (inference)",
                     .make = [] { return LayerPtr(layers::Dropout({.rate = 0.5, .seed = 3})); },
                     .input_shape = {4, 5},
                     .weight_shapes = {}});
}

TEST(CoreLayersHarness, Flatten) {
  run_layer_harness({.name = "Flatten",
                     .make = [] { return LayerPtr(layers::Flatten()); },
                     .input_shape = {2, 3, 4, 2},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Flatten channels_first",
                     .make = [] { return LayerPtr(layers::Flatten({.data_format = "channels_first"})); },
                     .input_shape = {2, 3, 2, 2},
                     .weight_shapes = {}});
}

TEST(CoreLayersHarness, Reshape) {
  run_layer_harness({.name = "Reshape (4, -1)",
                     .make = [] { return LayerPtr(layers::Reshape({.target_shape = {4, -1}})); },
                     .input_shape = {2, 3, 4},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Reshape (6, 2)",
                     .make = [] { return LayerPtr(layers::Reshape({.target_shape = {6, 2}})); },
                     .input_shape = {3, 12},
                     .weight_shapes = {}});
}

// ---------------- layer-specific behaviour ----------------

TEST(Dense, WrongLastExtentNamesLayerAndShapes) {
  layers::Dense dense({.units = 4, .name = "my_dense"});
  dense(Tensor::zeros({2, 3}));
  std::string m = message_of([&] { dense(Tensor::zeros({2, 5})); });
  EXPECT_TRUE(contains(m, "my_dense")) << m;
  EXPECT_TRUE(contains(m, "Dense")) << m;
  EXPECT_TRUE(contains(m, "3")) << m;
  EXPECT_TRUE(contains(m, "(2, 5)")) << m;
  EXPECT_THROW(dense(Tensor::zeros({2, 5})), ShapeError);

  // Symbolic: the error also names the layer that produced the input.
  auto input = layers::Input({7}, {.name = "features"});
  std::string s = message_of([&] { dense(input); });
  EXPECT_TRUE(contains(s, "my_dense")) << s;
  EXPECT_TRUE(contains(s, "(None, 7)")) << s;
  EXPECT_TRUE(contains(s, "features")) << s;

  layers::Dense fresh({.units = 2});
  EXPECT_THROW(fresh(Tensor::zeros({3})), ShapeError);  // rank 1
}

TEST(Dense, ComputesXWPlusB) {
  layers::Dense dense({.units = 2, .kernel_initializer = std::make_shared<initializers::Constant>(0.5),
                       .bias_initializer = std::make_shared<initializers::Constant>(1.0)});
  Tensor y = dense(Tensor::from_vector(std::vector<float>{1, 2, 3, -4, 0, 1}, {2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 4, -0.5, -0.5}));
  EXPECT_EQ(dense->kernel().path(), "dense/kernel");
  EXPECT_EQ(dense->bias().path(), "dense/bias");
}

TEST(Dense, BadOptions) {
  EXPECT_THROW(layers::Dense({.units = 0}), ValueError);
  EXPECT_THROW(layers::Dense({.units = 3, .activation = "reluu"}), ValueError);
  EXPECT_THROW(layers::Dense({.units = 3, .kernel_initializer = "nope"}), ValueError);
}

TEST(Dense, ReadsKeras2AndKeras3Configs) {
  json k3 = json::parse(R"({"name": "dense", "trainable": true,
     "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
     "units": 3, "activation": "relu", "use_bias": true,
     "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null},
     "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
     "kernel_regularizer": null, "bias_regularizer": null, "kernel_constraint": null, "bias_constraint": null,
     "quantization_config": null})");
  LayerPtr a = layer_from_config("Dense", k3);
  auto* d = dynamic_cast<layers::DenseImpl*>(a.get());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->options().units, 3);
  EXPECT_EQ(d->options().activation, "relu");
  EXPECT_EQ(a->name(), "dense");
  json k2 = json::parse(R"({"name": "dense_7", "trainable": false, "dtype": "float32", "units": 5,
     "activation": "linear", "use_bias": false,
     "kernel_initializer": {"class_name": "HeNormal", "config": {"seed": 4}},
     "bias_initializer": {"class_name": "Zeros", "config": {}},
     "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.001}}, "bias_regularizer": null,
     "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null})");
  LayerPtr b = layer_from_config("Dense", k2);
  EXPECT_EQ(b->name(), "dense_7");
  EXPECT_FALSE(b->trainable());
  json c = b->get_config();
  EXPECT_EQ(c["units"], 5);
  EXPECT_EQ(c["use_bias"], false);
  EXPECT_EQ(c["kernel_initializer"]["class_name"], "HeNormal");
  EXPECT_EQ(c["kernel_initializer"]["config"]["seed"], 4);
  EXPECT_EQ(c["kernel_initializer"]["module"], "keras.initializers");
  EXPECT_EQ(c["kernel_regularizer"]["config"]["l2"], 0.001);
  (*b)(Tensor::zeros({1, 2}));
  EXPECT_EQ(b->weights().size(), 1u);
  EXPECT_TRUE(b->trainable_weights().empty());
  // Activation None (Keras 2/3 may write null) is linear.
  json none = {{"units", 2}, {"activation", nullptr}};
  EXPECT_EQ(layer_from_config("Dense", none)->get_config()["activation"], "linear");
  EXPECT_THROW(layer_from_config("Dense", json::object()), ValueError);
}

// Keras 3.15 writes quantization_config (null for a float Dense); a quantized or LoRA Dense has
// other weights, and is refused by name.
TEST(Dense, QuantizationConfig) {
  EXPECT_TRUE(layers::Dense({.units = 2})->get_config().at("quantization_config").is_null());
  keras::testing::expect_error<NotImplementedError>(
      [] { layer_from_config("Dense", {{"name", "q"}, {"units", 2}, {"quantization_config", {{"mode", "int8"}}}}); },
      {"'q'", "quantization_config", "int8"});
  keras::testing::expect_error<NotImplementedError>(
      [] { layer_from_config("Dense", {{"name", "lora"}, {"units", 2}, {"lora_rank", 4}}); }, {"'lora'", "lora_rank"});
}

// Keras 3.15's InputLayer config; older ones lack ragged/optional. Sparse, ragged and optional
// inputs are refused by name.
TEST(InputLayer, KerasKeys) {
  auto x = layers::Input({3}, {.name = "x"});
  EXPECT_EQ(x.layer->get_config(), json::parse(R"({"batch_shape": [null, 3], "dtype": "float32", "sparse": false,
                                                  "ragged": false, "name": "x", "optional": false})"));
  EXPECT_EQ(layer_from_config("InputLayer", {{"batch_shape", {nullptr, 3}}, {"name", "old"}})->get_config()["optional"], false);
  for (const char* key : {"sparse", "ragged", "optional"})
    keras::testing::expect_error<NotImplementedError>(
        [&] { layer_from_config("InputLayer", {{"batch_shape", {nullptr, 3}}, {"name", "in"}, {key, true}}); },
        {"'in'", key});
}

TEST(Reshape, BadSizeNamesLayer) {
  layers::Reshape r({.target_shape = {5}});
  std::string m = message_of([&] { r(Tensor::zeros({2, 3, 4})); });
  EXPECT_TRUE(contains(m, "reshape")) << m;
  EXPECT_TRUE(contains(m, "(2, 3, 4)")) << m;
  EXPECT_TRUE(contains(m, "(5,)")) << m;
  EXPECT_THROW(r(Tensor::zeros({2, 3, 4})), ShapeError);
  layers::Reshape inferred({.target_shape = {5, -1}});
  EXPECT_THROW(inferred(Tensor::zeros({2, 12})), ShapeError);
  EXPECT_THROW(inferred(layers::Input({12})), ShapeError);
  EXPECT_THROW(layers::Reshape({.target_shape = {-1, -1}}), ValueError);
  EXPECT_THROW(layers::Reshape({.target_shape = {0, 3}}), ValueError);
  // Unknown feature extents are resolved at call time.
  layers::Reshape flex({.target_shape = {-1, 2}});
  EXPECT_EQ(flex(layers::Input({-1, 4})).shape, (Shape{-1, -1, 2}));
  EXPECT_EQ(flex(Tensor::zeros({3, 5, 4})).shape(), (Shape{3, 10, 2}));
}

TEST(Flatten, ShapesAndValues) {
  layers::Flatten f;
  EXPECT_EQ(f(Tensor::zeros({2, 3, 4})).shape(), (Shape{2, 12}));
  EXPECT_EQ(layers::Flatten()(Tensor::zeros({5})).shape(), (Shape{5, 1}));
  EXPECT_EQ(layers::Flatten()(layers::Input({-1, 3})).shape, (Shape{-1, -1}));
  // channels_first flattens in channels-last order.
  Tensor x = Tensor::arange(0, 8).view({1, 2, 2, 2});  // (batch, C, H, W)
  auto v = layers::Flatten({.data_format = "channels_first"})(x).to_vector<float>();
  EXPECT_EQ(v, (std::vector<float>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_THROW(layers::Flatten({.data_format = "nchw"}), ValueError);
}

TEST(Dropout, InferenceIdentityTrainingScaling) {
  layers::Dropout drop({.rate = 0.5, .seed = 7});
  Tensor x = Tensor::ones({1000});
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(drop(x, {.training = false}).to_vector<float>(), x.to_vector<float>());
  auto y = drop(x, {.training = true}).to_vector<float>();
  int zeros = 0;
  double sum = 0;
  for (float v : y) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f) << v;
    zeros += v == 0.0f;
    sum += v;
  }
  EXPECT_NEAR(zeros / 1000.0, 0.5, 0.06);
  EXPECT_NEAR(sum / 1000.0, 1.0, 0.12);
  // Same seed, same masks; successive calls draw new masks.
  layers::Dropout twin({.rate = 0.5, .seed = 7});
  EXPECT_EQ(twin(x, {.training = true}).to_vector<float>(), y);
  EXPECT_NE(drop(x, {.training = true}).to_vector<float>(), y);
  // The inherited training mode applies when no explicit flag is given.
  {
    TrainingScope scope(true);
    EXPECT_NE(layers::Dropout({.rate = 0.9})(x).to_vector<float>(), x.to_vector<float>());
  }
  EXPECT_THROW(layers::Dropout({.rate = 1.0}), ValueError);
  EXPECT_THROW(layers::Dropout({.rate = -0.1}), ValueError);
  EXPECT_THROW(layers::Dropout({.rate = 0.5, .noise_shape = Shape{0, 5}}), ValueError);  // more in test_dropout_noise_shape
  json c = drop->get_config();
  EXPECT_EQ(c["rate"], 0.5);
  EXPECT_EQ(c["seed"], 7);
  EXPECT_TRUE(c["noise_shape"].is_null());
}

TEST(Activation, AppliesAndRejectsUnknown) {
  Tensor x = Tensor::from_vector(std::vector<float>{-1, 0, 2});
  EXPECT_EQ(layers::Activation({.activation = "relu"})(x).to_vector<float>(), (std::vector<float>{0, 0, 2}));
  EXPECT_EQ(layers::Activation()(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(layers::Activation({.activation = "nope"}), ValueError);
  EXPECT_EQ(layer_from_config("Activation", {{"activation", "tanh"}})->get_config()["activation"], "tanh");
}

TEST(CoreLayers, SnakeCaseNames) {
  EXPECT_EQ(layers::Dense({.units = 1})->name(), "dense");
  EXPECT_EQ(layers::Activation()->name(), "activation");
  EXPECT_EQ(layers::Dropout()->name(), "dropout");
  EXPECT_EQ(layers::Flatten()->name(), "flatten");
  EXPECT_EQ(layers::Reshape({.target_shape = {1}})->name(), "reshape");
  EXPECT_EQ(layers::Dense({.units = 1, .name = "head"})->name(), "head");
  for (const char* cls : {"Dense", "Activation", "Dropout", "Flatten", "Reshape"}) {
    auto names = registered_layers();
    EXPECT_NE(std::find(names.begin(), names.end(), cls), names.end()) << cls;
  }
}
