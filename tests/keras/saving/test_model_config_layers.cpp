// Every registered layer class survives get_config -> Keras 3 object -> Keras 2 schema ->
// model_from_config inside a model, and custom classes registered under a package round-trip with
// registered_name "package>Class".
#include <gtest/gtest.h>

#include <set>

#include "backend/ops.h"
#include "keras/keras.h"
#include "keras/saving/model_config.h"

using namespace keras;
namespace L = keras::layers;

namespace {

struct LayerCase {
  std::string class_name;
  json config;
  std::vector<Shape> inputs;  // without the batch axis
  std::string input_dtype = "float32";  // an integer dtype: ids in [0, 4)
};

const std::vector<LayerCase>& layer_cases() {
  static const std::vector<LayerCase> cases = {
      {"Activation", {{"activation", "tanh"}}, {{4}}},
      {"AveragePooling1D", {{"pool_size", 2}}, {{6, 3}}},
      {"AveragePooling2D", {{"pool_size", 2}}, {{4, 4, 3}}},
      {"BatchNormalization", {{"momentum", 0.9}}, {{4}}},
      {"CenterCrop", {{"height", 2}, {"width", 3}}, {{4, 5, 2}}},
      {"Concatenate", {{"axis", -1}}, {{3}, {2}}},
      {"Conv1D", {{"filters", 2}, {"kernel_size", 3}, {"activation", "relu"}}, {{6, 3}}},
      {"Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"padding", "same"}}, {{5, 5, 3}}},
      {"Conv2DTranspose", {{"filters", 2}, {"kernel_size", 3}, {"strides", 2}}, {{3, 3, 2}}},
      {"Cropping1D", {{"cropping", {1, 2}}}, {{6, 3}}},
      {"Cropping2D", {{"cropping", 1}}, {{4, 4, 2}}},
      {"Dense", {{"units", 3}, {"kernel_regularizer", "l2"}}, {{4}}},
      {"DepthwiseConv2D", {{"kernel_size", 3}, {"depth_multiplier", 2}}, {{5, 5, 2}}},
      {"Dot", {{"axes", 1}}, {{3}, {3}}},
      {"CustomScaleLayer", {{"scale", 0.17}}, {{3}, {3}}},
      {"Dropout", {{"rate", 0.3}}, {{4}}},
      {"Dropout", {{"rate", 0.3}, {"noise_shape", {nullptr, 1}}}, {{4}}},
      {"ELU", {{"alpha", 0.5}}, {{4}}},
      {"Embedding", {{"input_dim", 4}, {"output_dim", 3}, {"mask_zero", true}}, {{5}}, "int32"},
      {"Embedding", {{"input_dim", 4}, {"output_dim", 2}}, {{2, 3}}, "int64"},
      {"Flatten", json::object(), {{3, 2}}},
      {"GlobalAveragePooling1D", json::object(), {{5, 3}}},
      {"GlobalAveragePooling2D", {{"keepdims", true}}, {{4, 4, 3}}},
      {"GlobalMaxPooling1D", json::object(), {{5, 3}}},
      {"GlobalMaxPooling2D", json::object(), {{4, 4, 3}}},
      {"Identity", json::object(), {{4}}},
      {"LayerNormalization", {{"epsilon", 0.01}}, {{4}}},
      {"LayerScale", {{"init_values", 0.5}, {"projection_dim", 4}}, {{4}}},
      {"LeakyReLU", {{"negative_slope", 0.2}}, {{4}}},
      {"Masking", {{"mask_value", 0.5}}, {{5, 3}}},
      {"MaxPooling1D", {{"pool_size", 2}}, {{6, 3}}},
      {"MaxPooling2D", {{"pool_size", 2}, {"strides", 1}}, {{4, 4, 3}}},
      {"Normalization", {{"axis", -1}}, {{4}}},
      {"Permute", {{"dims", {2, 1}}}, {{5, 3}}},
      {"Normalization", {{"axis", nullptr}, {"mean", 0.5}, {"variance", 2.0}, {"invert", true}}, {{4}}},
      {"ReLU", {{"max_value", 6.0}}, {{4}}},
      {"RandomBrightness", {{"factor", 0.2}, {"seed", 1}}, {{4, 4, 2}}},
      {"RandomContrast", {{"factor", 0.2}, {"value_range", {0, 255}}}, {{4, 4, 2}}},
      {"RandomCrop", {{"height", 4}, {"width", 5}, {"seed", 3}}, {{4, 5, 2}}},
      {"RandomFlip", {{"mode", "horizontal"}}, {{4, 4, 2}}},
      {"RandomRotation", {{"factor", 0.1}, {"fill_mode", "constant"}}, {{4, 4, 2}}},
      {"RandomTranslation", {{"height_factor", 0.1}, {"width_factor", {-0.2, 0.1}}}, {{4, 4, 2}}},
      {"RandomZoom", {{"height_factor", 0.2}, {"width_factor", nullptr}}, {{4, 4, 2}}},
      {"Rescaling", {{"scale", 0.5}, {"offset", 1.0}}, {{4}}},
      {"RepeatVector", {{"n", 3}}, {{4}}},
      {"Reshape", {{"target_shape", {3, 2}}}, {{6}}},
      {"Resizing", {{"height", 3}, {"width", 2}, {"interpolation", "nearest"}}, {{4, 4, 2}}},
      {"SeparableConv2D", {{"filters", 2}, {"kernel_size", 3}}, {{5, 5, 2}}},
      {"Softmax", {{"axis", -1}}, {{4}}},
      {"SpatialDropout2D", {{"rate", 0.3}}, {{4, 4, 2}}},
      {"StochasticDepth", {{"drop_path_rate", 0.2}}, {{4}}},
      {"UpSampling1D", {{"size", 3}}, {{2, 2}}},
      {"UpSampling2D", {{"size", 2}}, {{2, 2, 2}}},
      {"ZeroPadding1D", {{"padding", {2, 0}}}, {{3, 2}}},
      {"ZeroPadding2D", {{"padding", 1}}, {{3, 3, 2}}},
      {"Add", json::object(), {{3}, {3}}},
      {"Subtract", json::object(), {{3}, {3}}},
      {"Multiply", json::object(), {{3}, {3}}},
      {"Average", json::object(), {{3}, {3}}},
      {"Maximum", json::object(), {{3}, {3}}},
      {"Minimum", json::object(), {{3}, {3}}},
      {"LSTM", {{"units", 2}, {"return_sequences", true}, {"go_backwards", true}}, {{4, 3}}},
      {"GRU", {{"units", 2}, {"reset_after", false}, {"recurrent_dropout", 0.1}}, {{4, 3}}},
      {"SimpleRNN", {{"units", 2}, {"activation", "relu"}, {"unroll", true}}, {{4, 3}}},
      {"RNN", {{"cell", {{"class_name", "GRUCell"}, {"config", {{"units", 2}}}}}, {"return_sequences", true}}, {{4, 3}}},
      {"Bidirectional", {{"layer", {{"class_name", "LSTM"}, {"config", {{"units", 2}}}}}, {"merge_mode", "sum"}}, {{4, 3}}},
      {"TimeDistributed", {{"layer", {{"class_name", "Dense"}, {"config", {{"units", 2}}}}}}, {{4, 3}}},
      {"ConvLSTM1D", {{"filters", 2}, {"kernel_size", 2}, {"strides", 2}, {"use_bias", false}}, {{3, 6, 2}}},
      {"ConvLSTM2D", {{"filters", 2}, {"kernel_size", {2, 3}}, {"padding", "same"}, {"return_sequences", true}},
       {{3, 4, 4, 1}}},
      {"ConvLSTM3D", {{"filters", 1}, {"kernel_size", 2}, {"dilation_rate", {1, 2, 1}}, {"go_backwards", true}},
       {{2, 3, 4, 3, 1}}},
      {"LSTMCell", {{"units", 2}, {"unit_forget_bias", false}}, {{3}, {2}, {2}}},
      {"GRUCell", {{"units", 2}}, {{3}, {2}}},
      {"SimpleRNNCell", {{"units", 2}, {"use_bias", false}}, {{3}, {2}}},
      {"StackedRNNCells", {{"cells", {{{"class_name", "SimpleRNNCell"}, {"config", {{"units", 3}}}},
                                      {{"class_name", "LSTMCell"}, {"config", {{"units", 2}}}}}}},
       {{3}, {3}, {2}, {2}}},
      {"MultiHeadAttention", {{"num_heads", 2}, {"key_dim", 3}, {"value_dim", 2}}, {{4, 6}, {5, 6}}},
      {"MultiHeadAttention", {{"num_heads", 2}, {"key_dim", 2}, {"attention_axes", {2}}},
       {{3, 4, 5}, {3, 4, 5}}},
      {"GroupedQueryAttention", {{"head_dim", 3}, {"num_query_heads", 4}, {"num_key_value_heads", 2}}, {{4, 6}, {5, 6}}},
      {"GroupQueryAttention", {{"head_dim", 2}, {"num_query_heads", 2}, {"num_key_value_heads", 1}}, {{4, 6}, {5, 6}}},
      {"Attention", {{"use_scale", true}, {"score_mode", "concat"}}, {{4, 6}, {5, 6}}},
      {"AdditiveAttention", json::object(), {{4, 6}, {5, 6}, {5, 6}}},
      {"UnitNormalization", {{"axis", {1, 2}}}, {{3, 4}}},
      {"GroupNormalization", {{"groups", 2}}, {{3, 4}}},
  };
  return cases;
}

void expect_same_predictions(Model& a, Model& b, const TensorList& xs, const std::string& tag) {
  b.set_weights(a.get_weights());
  TensorList pa = a.predict_on_batch(xs), pb = b.predict_on_batch(xs);
  ASSERT_EQ(pa.size(), pb.size()) << tag;
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].shape(), pb[i].shape()) << tag;
    EXPECT_EQ(pa[i].to_vector<float>(), pb[i].to_vector<float>()) << tag;
  }
}

void check_model(Model& model, const TensorList& xs, const std::string& tag) {
  json k3 = serialize_model(model);
  auto from3 = model_from_config(json::parse(k3.dump()));
  EXPECT_EQ(serialize_model(*from3), k3) << tag;
  expect_same_predictions(model, *from3, xs, tag + " (Keras 3)");
  json k2 = to_keras2(k3);
  auto from2 = model_from_config(json::parse(k2.dump()));
  EXPECT_EQ(serialize_model(*from2), k3) << tag << "\nKeras 2 form: " << k2.dump();
  expect_same_predictions(model, *from2, xs, tag + " (Keras 2)");
}

}  // namespace

TEST(ModelConfigLayers, EveryLayerClassRoundTripsInFunctionalAndSequential) {
  for (const auto& c : layer_cases()) {
    SCOPED_TRACE(c.class_name);
    set_random_seed(7);
    std::vector<KerasTensor> inputs;
    TensorList xs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      inputs.push_back(L::Input(c.inputs[i], {.dtype = c.input_dtype}));
      Shape batch = c.inputs[i];
      batch.insert(batch.begin(), 2);
      xs.push_back(c.input_dtype == "float32" ? random::normal(batch, 0, 1, 11 + i)
                                              : ops::cast(random::uniform(batch, 0, 3.999, 11 + i), dtype_from_name(c.input_dtype)));
    }
    LayerPtr layer = layer_from_config(c.class_name, c.config);
    Model functional(inputs, (*layer)(inputs), "f");
    // Non-trivial weights (BN moving stats, zero biases) so that a wrong copy would show.
    TensorList w = functional.get_weights();
    for (size_t i = 0; i < w.size(); ++i) w[i] = ops::abs(random::normal(w[i].shape(), 0.5, 0.2, 100 + i));
    functional.set_weights(w);
    check_model(functional, xs, c.class_name + " functional");
    if (c.inputs.size() == 1) {
      Sequential seq(std::vector<LayerPtr>{layer_from_config(c.class_name, c.config)}, "s");
      seq.build_for([&] { Shape s = c.inputs[0]; s.insert(s.begin(), -1); return s; }());
      check_model(seq, xs, c.class_name + " sequential");
    }
  }
}

TEST(ModelConfigLayers, EveryRegisteredLayerClassIsCovered) {
  std::set<std::string> covered{"InputLayer", "Functional", "Model", "Sequential"};
  for (const auto& c : layer_cases()) covered.insert(c.class_name);
  for (const auto& name : registered_layers())
    if (registered_layer_name(name).empty())  // built-in
      EXPECT_TRUE(covered.count(name)) << "add a case for " << name << " to layer_cases()";
}

// ---- custom layers ----
namespace {
// y = x * factor * scale, `scale` a trainable (features,) weight.
struct ScaleOptions {
  double factor = 1.0;
  std::string name;
  bool trainable = true;
  std::string dtype = "float32";
};

class ScaleImpl : public Layer {
 public:
  explicit ScaleImpl(ScaleOptions o) : Layer(LayerOptions{o.name, o.trainable, o.dtype}), factor_(o.factor) {}
  std::string class_name() const override { return "Scale"; }
  void build(const std::vector<Shape>& s) override {
    scale_ = add_weight("scale", {s[0].back()}, std::make_shared<initializers::Ones>());
  }
  TensorList call(const TensorList& in, const CallContext&) override {
    return {ops::multiply(ops::multiply(in[0], scale_.value()), factor_)};
  }
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  json get_config() const override {
    json c = base_config();
    c["factor"] = factor_;
    return c;
  }

 private:
  double factor_;
  Variable scale_;
};

KERAS_REGISTER_CUSTOM_LAYER("MyPackage", Scale, [](const json& c) -> LayerPtr {
  ScaleOptions o;
  o.factor = c.value("factor", 1.0);
  o.name = c.value("name", "");
  o.trainable = c.value("trainable", true);
  return std::make_shared<ScaleImpl>(o);
});
}  // namespace

TEST(ModelConfigLayers, CustomLayerUnderAPackageRoundTrips) {
  auto x = L::Input({3});
  auto y = (*std::make_shared<ScaleImpl>(ScaleOptions{.factor = 2.5}))(x);
  Model model(x, L::Dense({.units = 2})(y));
  json k3 = serialize_model(model);
  json entry = k3["config"]["layers"][1];
  EXPECT_EQ(entry["class_name"], "Scale");
  EXPECT_EQ(entry["registered_name"], "MyPackage>Scale");
  EXPECT_EQ(entry["module"], "MyPackage");
  EXPECT_EQ(entry["config"]["factor"], 2.5);
  json k2 = to_keras2(k3);
  EXPECT_EQ(k2["config"]["layers"][1]["class_name"], "MyPackage>Scale");
  EXPECT_EQ(registered_layer_name("Scale"), "MyPackage>Scale");
  EXPECT_EQ(registered_layer_name("Dense"), "");
  check_model(model, {random::normal({4, 3}, 0, 1, uint64_t{3})}, "custom");
  // A registered name with another package is a different class.
  json wrong = k3;
  wrong["config"]["layers"][1]["registered_name"] = "Other>Scale";
  EXPECT_THROW(model_from_config(wrong), TypeError);
}

TEST(ModelConfigLayers, UnregisteredLayerCannotBeSerialized) {
  class Unregistered : public Layer {
   public:
    std::string class_name() const override { return "Unregistered"; }
    TensorList call(const TensorList& in, const CallContext&) override { return in; }
  };
  auto x = L::Input({3});
  Model model(x, (*std::make_shared<Unregistered>())(x));
  try {
    serialize_model(model);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("'unregistered'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("register_layer"), std::string::npos) << e.what();
  }
}
