// The pooling, normalization, image and activation layers of issue 3: every layer through the
// layer harness, BatchNormalization's moving statistics against Keras's update formula, frozen
// BatchNormalization, Keras configs, and errors that name the layer and the shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/autodiff.h"
#include "layers/average_pooling1d.h"
#include "layers/average_pooling2d.h"
#include "layers/batch_normalization.h"
#include "layers/cropping2d.h"
#include "layers/elu.h"
#include "layers/global_average_pooling1d.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_max_pooling1d.h"
#include "layers/global_max_pooling2d.h"
#include "layers/input_layer.h"
#include "layers/layer_normalization.h"
#include "layers/layer_registry.h"
#include "layers/leaky_relu.h"
#include "layers/max_pooling1d.h"
#include "layers/max_pooling2d.h"
#include "layers/relu.h"
#include "layers/rescaling.h"
#include "layers/softmax.h"
#include "layers/spatial_dropout2d.h"
#include "layers/up_sampling2d.h"
#include "layers/zero_padding2d.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::run_layer_harness;
using layers::PairArg;

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

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Per-channel mean and biased variance of a (..., C) tensor, in double.
std::pair<std::vector<double>, std::vector<double>> moments(const Tensor& x) {
  auto v = x.to_vector<double>();
  const int64_t C = x.shape().back(), M = x.numel() / C;
  std::vector<double> mean(C, 0), var(C, 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) mean[c] += v[m * C + c] / M;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) var[c] += (v[m * C + c] - mean[c]) * (v[m * C + c] - mean[c]) / M;
  return {mean, var};
}

LayerPtr bn_layer(layers::BatchNormalizationOptions o = {}) { return LayerPtr(layers::BatchNormalization(std::move(o))); }
}  // namespace

// ---------------- the harness over every layer ----------------

TEST(PoolingLayersHarness, MaxAndAveragePooling2D) {
  run_layer_harness({.name = "MaxPooling2D default",
                     .make = [] { return LayerPtr(layers::MaxPooling2D()); },
                     .input_shape = {2, 5, 6, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "MaxPooling2D 3x3/2 same",
                     .make = [] { return LayerPtr(layers::MaxPooling2D({.pool_size = 3, .strides = 2, .padding = "same"})); },
                     .input_shape = {1, 7, 5, 2},
                     .weight_shapes = {}});
  run_layer_harness({.name = "AveragePooling2D (2, 3) strides (1, 2) same",
                     .make = [] {
                       return LayerPtr(layers::AveragePooling2D({.pool_size = {2, 3}, .strides = PairArg(1, 2), .padding = "same"}));
                     },
                     .input_shape = {2, 5, 7, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "AveragePooling2D default",
                     .make = [] { return LayerPtr(layers::AveragePooling2D()); },
                     .input_shape = {1, 4, 5, 2},
                     .weight_shapes = {}});
}

TEST(PoolingLayersHarness, Pooling1D) {
  run_layer_harness({.name = "MaxPooling1D",
                     .make = [] { return LayerPtr(layers::MaxPooling1D({.pool_size = 3, .strides = 2})); },
                     .input_shape = {2, 7, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "AveragePooling1D same",
                     .make = [] { return LayerPtr(layers::AveragePooling1D({.pool_size = 2, .padding = "same"})); },
                     .input_shape = {3, 5, 2},
                     .weight_shapes = {}});
}

TEST(PoolingLayersHarness, GlobalPooling) {
  for (bool keepdims : {false, true}) {
    std::string k = keepdims ? " keepdims" : "";
    run_layer_harness({.name = "GlobalAveragePooling2D" + k,
                       .make = [=] { return LayerPtr(layers::GlobalAveragePooling2D({.keepdims = keepdims})); },
                       .input_shape = {2, 3, 4, 5},
                       .weight_shapes = {}});
    run_layer_harness({.name = "GlobalMaxPooling2D" + k,
                       .make = [=] { return LayerPtr(layers::GlobalMaxPooling2D({.keepdims = keepdims})); },
                       .input_shape = {2, 3, 4, 5},
                       .weight_shapes = {}});
    run_layer_harness({.name = "GlobalAveragePooling1D" + k,
                       .make = [=] { return LayerPtr(layers::GlobalAveragePooling1D({.keepdims = keepdims})); },
                       .input_shape = {2, 6, 3},
                       .weight_shapes = {}});
    run_layer_harness({.name = "GlobalMaxPooling1D" + k,
                       .make = [=] { return LayerPtr(layers::GlobalMaxPooling1D({.keepdims = keepdims})); },
                       .input_shape = {2, 6, 3},
                       .weight_shapes = {}});
  }
}

TEST(NormalizationLayersHarness, BatchNormalization) {
  for (bool training : {false, true}) {
    run_layer_harness({.name = std::string("BatchNormalization training=") + (training ? "true" : "false"),
                       .make = [] { return bn_layer({.beta_initializer = "random_normal", .gamma_initializer = "random_normal"}); },
                       .input_shape = {4, 3, 2, 5},
                       .weight_shapes = {{5}, {5}, {5}, {5}},
                       .trainable_count = 2,
                       .gradcheck_input_shape = {3, 2, 1, 5},
                       .training = training});
  }
  run_layer_harness({.name = "BatchNormalization rank 2, no scale",
                     .make = [] { return bn_layer({.scale = false}); },
                     .input_shape = {6, 4},
                     .weight_shapes = {{4}, {4}, {4}},
                     .trainable_count = 1,
                     .training = true});
}

TEST(NormalizationLayersHarness, LayerNormalization) {
  run_layer_harness({.name = "LayerNormalization",
                     .make = [] { return LayerPtr(layers::LayerNormalization({.beta_initializer = "random_normal"})); },
                     .input_shape = {3, 2, 6},
                     .weight_shapes = {{6}, {6}}});
  run_layer_harness({.name = "LayerNormalization no center",
                     .make = [] { return LayerPtr(layers::LayerNormalization({.center = false})); },
                     .input_shape = {4, 5},
                     .weight_shapes = {{5}}});
}

TEST(ImageLayersHarness, PaddingCroppingUpsampling) {
  run_layer_harness({.name = "ZeroPadding2D ((1, 2), (0, 1))",
                     .make = [] { return LayerPtr(layers::ZeroPadding2D({.padding = {PairArg(1, 2), PairArg(0, 1)}})); },
                     .input_shape = {2, 3, 4, 2},
                     .weight_shapes = {}});
  run_layer_harness({.name = "ZeroPadding2D default",
                     .make = [] { return LayerPtr(layers::ZeroPadding2D()); },
                     .input_shape = {1, 2, 2, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Cropping2D",
                     .make = [] { return LayerPtr(layers::Cropping2D({.cropping = {PairArg(1, 0), PairArg(2, 1)}})); },
                     .input_shape = {2, 4, 5, 2},
                     .weight_shapes = {}});
  run_layer_harness({.name = "UpSampling2D nearest",
                     .make = [] { return LayerPtr(layers::UpSampling2D({.size = {2, 3}})); },
                     .input_shape = {2, 2, 3, 2},
                     .weight_shapes = {}});
  run_layer_harness({.name = "UpSampling2D bilinear",
                     .make = [] { return LayerPtr(layers::UpSampling2D({.interpolation = "bilinear"})); },
                     .input_shape = {2, 3, 2, 2},
                     .weight_shapes = {}});
  run_layer_harness({.name = "SpatialDropout2D (inference)",
                     .make = [] { return LayerPtr(layers::SpatialDropout2D({.rate = 0.5, .seed = 4})); },
                     .input_shape = {2, 3, 3, 4},
                     .weight_shapes = {}});
}

TEST(ActivationLayersHarness, All) {
  run_layer_harness({.name = "ReLU", .make = [] { return LayerPtr(layers::ReLU()); }, .input_shape = {3, 4}, .weight_shapes = {}});
  run_layer_harness({.name = "ReLU max_value 6",
                     .make = [] { return LayerPtr(layers::ReLU({.max_value = 6.0})); },
                     .input_shape = {3, 4},
                     .weight_shapes = {},
                     .make_input = [](const Shape& s, uint64_t seed) { return random::normal(s, 0, 4, seed); }});
  run_layer_harness({.name = "ReLU general",
                     .make = [] { return LayerPtr(layers::ReLU({.max_value = 1.5, .negative_slope = 0.1, .threshold = 0.3})); },
                     .input_shape = {3, 4},
                     .weight_shapes = {}});
  run_layer_harness({.name = "LeakyReLU", .make = [] { return LayerPtr(layers::LeakyReLU()); }, .input_shape = {3, 4}, .weight_shapes = {}});
  run_layer_harness({.name = "ELU", .make = [] { return LayerPtr(layers::ELU({.alpha = 0.5})); }, .input_shape = {3, 4}, .weight_shapes = {}});
  run_layer_harness({.name = "Softmax axis 1",
                     .make = [] { return LayerPtr(layers::Softmax({.axis = 1})); },
                     .input_shape = {2, 3, 4},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Rescaling",
                     .make = [] { return LayerPtr(layers::Rescaling({.scale = 1.0 / 255, .offset = -0.5})); },
                     .input_shape = {2, 3},
                     .weight_shapes = {}});
}

// ---------------- BatchNormalization semantics ----------------

// Two training steps (forward under a tape, SGD on gamma and beta) must leave
// moving = moving * momentum + batch * (1 - momentum), with the batch's biased variance.
TEST(BatchNormalization, MovingStatisticsFollowKerasFormula) {
  const double momentum = 0.9;
  layers::BatchNormalization bn({.momentum = momentum});
  Tensor x1 = random::normal({4, 3, 2, 3}, 1.0, 2.0, uint64_t{1});
  Tensor x2 = random::normal({4, 3, 2, 3}, -0.5, 0.5, uint64_t{2});
  std::vector<double> mm(3, 0.0), mv(3, 1.0);
  for (const Tensor& x : {x1, x2}) {
    auto tw = bn->trainable_weights();
    {
      GradientTape tape;
      Tensor y = bn(x, {.training = true});
      Tensor loss = ops::mean(ops::square(y - 0.3));
      TensorList grads = tape.gradient(loss, {bn->gamma().value(), bn->beta().value()});
      NoGradGuard no_grad;
      Variable gamma = bn->gamma(), beta = bn->beta();
      gamma.assign(ops::subtract(gamma.value(), ops::multiply(grads[0], 0.1)));
      beta.assign(ops::subtract(beta.value(), ops::multiply(grads[1], 0.1)));
    }
    auto [mean, var] = moments(x);
    for (int c = 0; c < 3; ++c) {
      mm[c] = mm[c] * momentum + mean[c] * (1 - momentum);
      mv[c] = mv[c] * momentum + var[c] * (1 - momentum);
    }
  }
  EXPECT_LT(max_abs_diff(bn->moving_mean().value().to_vector<double>(), mm), 1e-5);
  EXPECT_LT(max_abs_diff(bn->moving_variance().value().to_vector<double>(), mv), 1e-5);
  EXPECT_EQ(bn->non_trainable_weights().size(), 2u);
  EXPECT_EQ(bn->weights()[2].path(), bn->name() + "/moving_mean");
}

TEST(BatchNormalization, TrainingUsesBatchStatisticsInferenceUsesMoving) {
  layers::BatchNormalization bn({.epsilon = 1e-3});
  Tensor x = random::normal({8, 2, 2, 3}, 3.0, 2.0, uint64_t{3});
  Tensor y = bn(x, {.training = true});
  auto [ymean, yvar] = moments(y);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(ymean[c], 0.0, 1e-5);
    EXPECT_NEAR(yvar[c], 1.0, 1e-2);
  }
  // Inference: (x - moving_mean) / sqrt(moving_var + eps) * gamma + beta.
  Variable mm = bn->moving_mean(), mv = bn->moving_variance();
  mm.assign(Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}));
  mv.assign(Tensor::from_vector(std::vector<float>{4, 1, 0.25}, {3}));
  Tensor yi = bn(x, {.training = false});
  auto xv = x.to_vector<double>(), yv = yi.to_vector<double>();
  const double m[3] = {1, 2, 3}, v[3] = {4, 1, 0.25};
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(yv[i], (xv[i] - m[i % 3]) / std::sqrt(v[i % 3] + 1e-3), 1e-5);
}

// Keras 3: a frozen BN runs in inference mode even when called with training=true, and its
// moving statistics stay bit-identical.
TEST(BatchNormalization, FrozenUsesMovingStatisticsAndNeverUpdatesThem) {
  layers::BatchNormalization bn;
  Tensor x = random::normal({4, 3, 3, 2}, 2.0, 3.0, uint64_t{5});
  bn(x, {.training = true});
  Tensor mm = bn->moving_mean().value().clone(), mv = bn->moving_variance().value().clone();
  bn->set_trainable(false);
  Tensor frozen_train = bn(x, {.training = true});
  Tensor inference = bn(x, {.training = false});
  EXPECT_EQ(frozen_train.to_vector<float>(), inference.to_vector<float>());
  EXPECT_EQ(bn->moving_mean().value().to_vector<float>(), mm.to_vector<float>());
  EXPECT_EQ(bn->moving_variance().value().to_vector<float>(), mv.to_vector<float>());
  bn->set_trainable(true);
  bn(x, {.training = true});
  EXPECT_NE(bn->moving_mean().value().to_vector<float>(), mm.to_vector<float>());
}

TEST(BatchNormalization, KerasConfigRoundTrip) {
  json keras3 = json::parse(R"({"name": "batch_normalization", "trainable": true,
    "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
    "axis": -1, "momentum": 0.9, "epsilon": 0.001, "center": true, "scale": false,
    "beta_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
    "gamma_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
    "moving_mean_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
    "moving_variance_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
    "beta_regularizer": null, "gamma_regularizer": null, "beta_constraint": null, "gamma_constraint": null,
    "synchronized": false})");
  LayerPtr layer = layer_from_config("BatchNormalization", keras3);
  json c = layer->get_config();
  for (const char* key : {"axis", "momentum", "epsilon", "center", "scale", "beta_initializer", "gamma_initializer",
                          "moving_mean_initializer", "moving_variance_initializer", "beta_regularizer",
                          "gamma_regularizer", "beta_constraint", "gamma_constraint", "synchronized"})
    EXPECT_TRUE(c.contains(key)) << key;
  EXPECT_DOUBLE_EQ(c["momentum"].get<double>(), 0.9);
  EXPECT_FALSE(c["scale"].get<bool>());
  (*layer)(Tensor::zeros({2, 3}));
  ASSERT_EQ(layer->weights().size(), 3u);  // beta, moving_mean, moving_variance
  EXPECT_EQ(layer->weights()[0].name(), "beta");
  // Keras 2 writes the axis as a list.
  json keras2 = {{"name", "bn"}, {"axis", {3}}, {"momentum", 0.99}, {"epsilon", 0.001}};
  EXPECT_EQ(layer_from_config("BatchNormalization", keras2)->get_config()["axis"], 3);
}

// Keras 3.15 writes renorm, renorm_clipping and renorm_momentum; configs without them (Keras 2's
// V1, hand-written) read as Keras's defaults. Batch renormalization itself is refused, so a model
// that uses it is never trained as plain batch normalization.
TEST(BatchNormalization, RenormKeys) {
  json c = layer_from_config("BatchNormalization", {{"name", "bn"}})->get_config();
  EXPECT_EQ(c["renorm"], false);
  EXPECT_TRUE(c["renorm_clipping"].is_null());
  EXPECT_DOUBLE_EQ(c["renorm_momentum"].get<double>(), 0.99);
  json kept = {{"name", "bn"}, {"renorm", false}, {"renorm_clipping", {{"rmax", 3.0}}}, {"renorm_momentum", 0.9}};
  json back = layer_from_config("BatchNormalization", kept)->get_config();
  EXPECT_EQ(back["renorm_clipping"], kept["renorm_clipping"]);
  EXPECT_DOUBLE_EQ(back["renorm_momentum"].get<double>(), 0.9);
  keras::testing::expect_error<NotImplementedError>(
      [] { layer_from_config("BatchNormalization", {{"name", "bn_r"}, {"renorm", true}}); }, {"'bn_r'", "renorm"});
  keras::testing::expect_error<NotImplementedError>(
      [] { layers::BatchNormalization({.renorm = true, .name = "bn_c"}); }, {"'bn_c'", "renorm"});
  EXPECT_THROW(layer_from_config("BatchNormalization", {{"renorm_clipping", 3}}), ValueError);
}

// ---------------- configs of the weightless layers ----------------

TEST(PoolNormLayerConfigs, KerasKeys) {
  json mp = layers::MaxPooling2D({.pool_size = 3})->get_config();
  EXPECT_EQ(mp["pool_size"], json({3, 3}));
  EXPECT_EQ(mp["strides"], json({3, 3}));  // resolved, as Keras stores it
  EXPECT_EQ(mp["padding"], "valid");
  EXPECT_EQ(mp["data_format"], "channels_last");
  json ap1 = layers::AveragePooling1D({.pool_size = 4, .strides = 1})->get_config();
  EXPECT_EQ(ap1["pool_size"], json({4}));
  EXPECT_EQ(ap1["strides"], json({1}));
  json gap = layers::GlobalAveragePooling2D()->get_config();
  EXPECT_EQ(gap["keepdims"], false);
  EXPECT_EQ(layers::ZeroPadding2D({.padding = 2})->get_config()["padding"], json({{2, 2}, {2, 2}}));
  EXPECT_EQ(layers::ZeroPadding2D({.padding = {PairArg(1), PairArg(3)}})->get_config()["padding"], json({{1, 1}, {3, 3}}));
  EXPECT_EQ(layers::UpSampling2D()->get_config()["size"], json({2, 2}));
  EXPECT_EQ(layers::UpSampling2D()->get_config()["interpolation"], "nearest");
  EXPECT_EQ(layers::LeakyReLU()->get_config()["negative_slope"], 0.3);
  EXPECT_TRUE(layers::ReLU()->get_config()["max_value"].is_null());
  EXPECT_EQ(layers::Softmax()->get_config()["axis"], -1);
  EXPECT_EQ(layers::LayerNormalization()->get_config()["axis"], json({-1}));
  // Keras 2 LeakyReLU wrote "alpha"; Keras 3 pooling may store sizes as plain ints.
  EXPECT_DOUBLE_EQ(layer_from_config("LeakyReLU", {{"name", "lr"}, {"alpha", 0.1}})->get_config()["negative_slope"].get<double>(), 0.1);
  EXPECT_EQ(layer_from_config("MaxPooling2D", {{"pool_size", 2}, {"strides", nullptr}})->get_config()["strides"], json({2, 2}));
}

// ---------------- errors name the layer and the shapes ----------------

TEST(PoolNormLayerErrors, NameLayerAndShapes) {
  layers::MaxPooling2D pool({.pool_size = 4, .name = "pool"});
  std::string m = message_of([&] { pool(Tensor::zeros({1, 3, 8, 2})); });
  EXPECT_TRUE(contains(m, "pool")) << m;
  EXPECT_TRUE(contains(m, "MaxPooling2D")) << m;
  EXPECT_TRUE(contains(m, "(1, 3, 8, 2)")) << m;
  EXPECT_TRUE(contains(m, "(4, 4)")) << m;
  EXPECT_THROW(pool(Tensor::zeros({1, 3, 8, 2})), ShapeError);
  EXPECT_THROW(pool(Tensor::zeros({3, 8, 2})), ShapeError);

  layers::MaxPooling1D pool1({.pool_size = 5, .name = "p1"});
  std::string m1 = message_of([&] { pool1(Tensor::zeros({2, 3, 4})); });
  EXPECT_TRUE(contains(m1, "p1") && contains(m1, "(2, 3, 4)")) << m1;

  // Symbolic: the error names the layer and the symbolic shape.
  auto input = layers::Input({2, 2, 3}, {.name = "img"});
  layers::AveragePooling2D avg({.pool_size = 3, .name = "avg"});
  std::string s = message_of([&] { avg(input); });
  EXPECT_TRUE(contains(s, "avg")) << s;
  EXPECT_TRUE(contains(s, "(None, 2, 2, 3)")) << s;

  EXPECT_THROW(layers::GlobalAveragePooling2D()(Tensor::zeros({2, 3, 4})), ShapeError);
  EXPECT_THROW(layers::Cropping2D({.cropping = 2})(Tensor::zeros({1, 4, 6, 1})), ShapeError);
  EXPECT_THROW(layers::UpSampling2D({.interpolation = "bicubic"}), ValueError);
  EXPECT_THROW(layers::MaxPooling2D({.data_format = "channels_first"}), NotImplementedError);
  EXPECT_THROW(layers::LeakyReLU({.negative_slope = -1}), ValueError);
  EXPECT_THROW(layers::SpatialDropout2D({.rate = 1.0}), ValueError);

  layers::BatchNormalization bn({.name = "bn"});
  bn(Tensor::zeros({2, 4}));
  std::string b = message_of([&] { bn(Tensor::zeros({2, 5})); });
  EXPECT_TRUE(contains(b, "bn") && contains(b, "(2, 5)") && contains(b, "4")) << b;
  EXPECT_THROW(layers::BatchNormalization({.axis = 1})(Tensor::zeros({2, 3, 4})), NotImplementedError);
}

// ---------------- behaviour ----------------

TEST(SpatialDropout2DLayer, DropsWholeChannelsWhileTraining) {
  layers::SpatialDropout2D drop({.rate = 0.5, .seed = 7});
  Tensor x = Tensor::ones({2, 3, 3, 8});
  EXPECT_TRUE(drop(x).same(x));  // inference: identity
  auto v = drop(x, {.training = true}).to_vector<float>();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 8; ++c)
      for (int64_t p = 1; p < 9; ++p) EXPECT_EQ(v[(n * 9 + p) * 8 + c], v[n * 9 * 8 + c]);
}

TEST(ReLULayer, MatchesKerasFormula) {
  Tensor x = Tensor::from_vector(std::vector<float>{-10, -5, 0, 0.2, 0.5, 5, 10});
  auto y = layers::ReLU({.max_value = 6, .negative_slope = 0.5, .threshold = 0.3})(x).to_vector<float>();
  // x > threshold: min(x, 6); else negative_slope * (x - threshold).
  std::vector<float> want = {-5.15f, -2.65f, -0.15f, -0.05f, 0.5f, 5.0f, 6.0f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
  auto l = layers::LeakyReLU()(x).to_vector<float>();
  EXPECT_FLOAT_EQ(l[0], -3.0f);
}
