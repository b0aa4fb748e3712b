// Model configs (keras/saving/model_config.h): serialize_model -> Keras 3 object, to_keras2, and
// model_from_config reading both back; predictions survive the round trip once weights are copied.
#include <gtest/gtest.h>

#include <set>

#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "layers/elementwise_merge.h"

using namespace keras;
namespace L = keras::layers;

namespace {

// Copies weights by position and compares predictions of `a` and `b` on the same data.
void expect_same_predictions(Model& a, Model& b, const TensorList& xs) {
  b.set_weights(a.get_weights());
  TensorList pa = a.predict_on_batch(xs), pb = b.predict_on_batch(xs);
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].shape(), pb[i].shape());
    auto va = pa[i].to_vector<float>(), vb = pb[i].to_vector<float>();
    for (size_t k = 0; k < va.size(); ++k) ASSERT_EQ(va[k], vb[k]) << "output " << i << " element " << k;
  }
}

// Keras 3 -> rebuild and Keras 2 -> rebuild both give back the same Keras 3 object and predictions.
void check_round_trips(Model& model, const TensorList& xs) {
  json k3 = serialize_model(model);
  auto from3 = model_from_config(json::parse(k3.dump()));
  EXPECT_EQ(serialize_model(*from3), k3);
  expect_same_predictions(model, *from3, xs);
  auto from2 = model_from_config(json::parse(to_keras2(k3).dump()));
  EXPECT_EQ(serialize_model(*from2), k3) << to_keras2(k3).dump();
  expect_same_predictions(model, *from2, xs);
}

Tensor sample(const Shape& s, uint64_t seed) { return random::normal(s, 0, 1, seed); }

const json& layer_entry(const json& model_object, const std::string& name) {
  for (const auto& e : model_object["config"]["layers"])
    if (e["name"] == name) return e;
  throw std::runtime_error("no layer " + name);
}

json tensor_history(const json& keras_tensor) { return keras_tensor["config"]["keras_history"]; }

}  // namespace

TEST(ModelConfig, SequentialKeras3Form) {
  Sequential model({L::Input({4}), L::Dense({.units = 3, .activation = "relu"}), L::Dropout({.rate = 0.5}),
                    L::Dense({.units = 2})},
                   "seq");
  json k3 = serialize_model(model);
  EXPECT_EQ(k3["module"], "keras");
  EXPECT_EQ(k3["class_name"], "Sequential");
  EXPECT_TRUE(k3["registered_name"].is_null());
  EXPECT_EQ(k3["build_config"]["input_shape"], json::parse("[null, 4]"));
  const json& c = k3["config"];
  EXPECT_EQ(c["name"], "seq");
  EXPECT_EQ(c["build_input_shape"], json::parse("[null, 4]"));
  EXPECT_EQ(c["dtype"]["class_name"], "DTypePolicy");
  ASSERT_EQ(c["layers"].size(), 4u);
  EXPECT_EQ(c["layers"][0]["class_name"], "InputLayer");
  EXPECT_EQ(c["layers"][0]["config"]["batch_shape"], json::parse("[null, 4]"));
  EXPECT_FALSE(c["layers"][1].contains("inbound_nodes"));
  EXPECT_EQ(c["layers"][1]["module"], "keras.layers");
  EXPECT_EQ(c["layers"][1]["config"]["dtype"]["config"]["name"], "float32");
  EXPECT_EQ(c["layers"][1]["build_config"]["input_shape"], json::parse("[null, 4]"));
  EXPECT_EQ(c["layers"][1]["config"]["kernel_initializer"]["module"], "keras.initializers");
  check_round_trips(model, {sample({5, 4}, 1)});
}

TEST(ModelConfig, SequentialKeras2Form) {
  Sequential model({L::Input({4}), L::Dense({.units = 3})}, "seq");
  json k2 = to_keras2(serialize_model(model));
  EXPECT_EQ(k2, json::parse(R"({"class_name": "Sequential", "config": {"name": "seq", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "dtype": "float32", "sparse": false,
      "ragged": false, "name": "input_layer"}},
    {"class_name": "Dense", "config": {"name": "dense", "trainable": true, "dtype": "float32", "units": 3,
      "activation": "linear", "use_bias": true,
      "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
      "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": null,
      "bias_regularizer": null, "kernel_constraint": null, "bias_constraint": null}}]}})"));
}

TEST(ModelConfig, UnbuiltSequentialHasNoInputLayer) {
  Sequential model({L::Dense({.units = 2})});
  json k3 = serialize_model(model);
  EXPECT_EQ(k3["config"]["layers"].size(), 1u);
  EXPECT_FALSE(k3.contains("build_config"));
  EXPECT_FALSE(k3["config"].contains("build_input_shape"));
  auto rebuilt = model_from_config(k3);
  EXPECT_FALSE(rebuilt->built());
  EXPECT_EQ(serialize_model(*rebuilt), k3);
}

TEST(ModelConfig, FunctionalTwoInputsSharedLayerAndCallKwargs) {
  auto a = L::Input({3}, {.name = "a"});
  auto b = L::Input({3}, {.name = "b"});
  L::Dense shared({.units = 3, .activation = "tanh", .name = "shared"});
  auto sum = L::Add({.name = "add"})({shared(a), shared(b)});
  auto drop = L::Dropout({.rate = 0.5, .name = "drop"})(sum, {.training = false});
  auto cat = L::Concatenate({.name = "cat"})({drop, a});
  auto out = L::Dense({.units = 2, .name = "head"})(cat);
  Model model({a, b}, {out, drop}, "two_in");
  json k3 = serialize_model(model);
  EXPECT_EQ(k3["module"], "keras.src.models.functional");
  EXPECT_EQ(k3["registered_name"], "Functional");
  EXPECT_EQ(k3["build_config"], json::parse(R"({"input_shape": null})"));
  EXPECT_EQ(k3["config"]["input_layers"], json::parse(R"([["a", 0, 0], ["b", 0, 0]])"));
  EXPECT_EQ(k3["config"]["output_layers"], json::parse(R"([["head", 0, 0], ["drop", 0, 0]])"));
  const json& s = layer_entry(k3, "shared");
  ASSERT_EQ(s["inbound_nodes"].size(), 2u);
  EXPECT_EQ(tensor_history(s["inbound_nodes"][1]["args"][0]), json::parse(R"(["b", 0, 0])"));
  const json& add = layer_entry(k3, "add");
  ASSERT_EQ(add["inbound_nodes"][0]["args"].size(), 1u);  // one list argument
  EXPECT_EQ(tensor_history(add["inbound_nodes"][0]["args"][0][1]), json::parse(R"(["shared", 1, 0])"));
  EXPECT_EQ(layer_entry(k3, "drop")["inbound_nodes"][0]["kwargs"], json::parse(R"({"training": false})"));
  EXPECT_EQ(layer_entry(k3, "a")["inbound_nodes"], json::array());
  EXPECT_EQ(layer_entry(k3, "a")["config"]["dtype"], "float32");

  json k2 = to_keras2(k3);
  EXPECT_EQ(k2["class_name"], "Functional");
  EXPECT_FALSE(k2.contains("module"));
  json k2shared;
  for (const auto& e : k2["config"]["layers"])
    if (e["name"] == "shared") k2shared = e;
  EXPECT_EQ(k2shared["inbound_nodes"], json::parse(R"([[["a", 0, 0, {}]], [["b", 0, 0, {}]]])"));
  EXPECT_FALSE(k2shared.contains("module"));
  EXPECT_EQ(k2shared["config"]["dtype"], "float32");
  EXPECT_EQ(k2["config"]["input_layers"], json::parse(R"([["a", 0, 0], ["b", 0, 0]])"));
  check_round_trips(model, {sample({4, 3}, 2), sample({4, 3}, 3)});
}

TEST(ModelConfig, NodeIndicesCountOnlyCallsInsideTheGraph) {
  // `dense` is called once outside the saved model first: inside it, its call is node 0.
  auto x = L::Input({2}, {.name = "x"});
  L::Dense dense({.units = 2, .name = "d"});
  auto unused = dense(L::Input({2}));
  Model model(x, dense(x), "m");
  json k3 = serialize_model(model);
  EXPECT_EQ(k3["config"]["output_layers"], json::parse(R"(["d", 0, 0])"));
  ASSERT_EQ(layer_entry(k3, "d")["inbound_nodes"].size(), 1u);
  check_round_trips(model, {sample({3, 2}, 4)});
}

TEST(ModelConfig, NestedModelsAtTwoDepths) {
  auto ii = L::Input({3});
  auto inner = std::make_shared<Model>(ii, L::Dense({.units = 3, .activation = "relu", .name = "d_in"})(ii), "inner");
  auto x = L::Input({3}, {.name = "x"});
  auto y1 = (*inner)(x);
  auto y2 = (*inner)(y1);  // called twice: nodes 0 and 1
  auto middle = std::make_shared<Model>(x, L::Dense({.units = 2, .name = "d_mid"})(y2), "middle");
  auto seq = std::make_shared<Sequential>(std::vector<LayerPtr>{L::Dense({.units = 2, .name = "d_seq"})}, "seq");
  auto x2 = L::Input({3}, {.name = "x2"});
  auto m = (*middle)(x2);
  auto s = (*seq)(m);
  auto outer = std::make_shared<Model>(std::vector<KerasTensor>{x2}, std::vector<KerasTensor>{s, m}, "outer");

  json k3 = serialize_model(*outer);
  // Keras 3: +1 for a nested Functional in output_layers only, never in keras_history.
  EXPECT_EQ(k3["config"]["output_layers"], json::parse(R"([["seq", 0, 0], ["middle", 1, 0]])"));
  EXPECT_EQ(tensor_history(layer_entry(k3, "seq")["inbound_nodes"][0]["args"][0]), json::parse(R"(["middle", 0, 0])"));
  const json& mid = layer_entry(k3, "middle");
  EXPECT_EQ(mid["class_name"], "Functional");
  EXPECT_EQ(mid["config"]["output_layers"], json::parse(R"(["d_mid", 0, 0])"));
  const json& in = layer_entry(mid, "inner");
  ASSERT_EQ(in["inbound_nodes"].size(), 2u);
  EXPECT_EQ(tensor_history(in["inbound_nodes"][1]["args"][0]), json::parse(R"(["inner", 0, 0])"));
  EXPECT_EQ(tensor_history(layer_entry(mid, "d_mid")["inbound_nodes"][0]["args"][0]), json::parse(R"(["inner", 1, 0])"));
  EXPECT_EQ(layer_entry(k3, "seq")["module"], "keras");

  // Keras 2: every nested model's first call is node 1, in node lists and input/output layers.
  json k2 = to_keras2(k3);
  EXPECT_EQ(k2["config"]["output_layers"], json::parse(R"([["seq", 1, 0], ["middle", 1, 0]])"));
  json k2mid, k2seq;
  for (const auto& e : k2["config"]["layers"]) {
    if (e["name"] == "middle") k2mid = e;
    if (e["name"] == "seq") k2seq = e;
  }
  EXPECT_EQ(k2seq["inbound_nodes"], json::parse(R"([[["middle", 1, 0, {}]]])"));
  EXPECT_EQ(k2seq["config"]["name"], "seq");
  EXPECT_EQ(k2seq["class_name"], "Sequential");
  json k2dmid;
  for (const auto& e : k2mid["config"]["layers"])
    if (e["name"] == "d_mid") k2dmid = e;
  EXPECT_EQ(k2dmid["inbound_nodes"], json::parse(R"([[["inner", 2, 0, {}]]])"));
  check_round_trips(*outer, {sample({4, 3}, 5)});
}

TEST(ModelConfig, FrozenLayersAndModelsKeepTheirFlag) {
  auto ii = L::Input({3});
  auto inner = std::make_shared<Model>(ii, L::Dense({.units = 3})(ii), "backbone");
  inner->set_trainable(false);
  auto x = L::Input({3});
  Model model(x, L::Dense({.units = 1, .name = "head"})((*inner)(x)));
  auto rebuilt = model_from_config(to_keras2(serialize_model(model)));
  EXPECT_FALSE(rebuilt->get_layer("backbone")->trainable());
  EXPECT_EQ(rebuilt->trainable_weights().size(), 2u);
  EXPECT_EQ(serialize_model(*rebuilt), serialize_model(model));
}

TEST(ModelConfig, SequentialAroundAFunctionalBackbone) {
  auto ii = L::Input({4});
  auto backbone = std::make_shared<Model>(ii, L::Dense({.units = 3, .activation = "relu", .name = "bd"})(ii), "backbone");
  Sequential model(std::vector<LayerPtr>{backbone, L::Dense({.units = 2, .name = "top"})}, "clf");
  model.build_for({-1, 4});
  json k3 = serialize_model(model);
  ASSERT_EQ(k3["config"]["layers"].size(), 3u);
  EXPECT_EQ(k3["config"]["layers"][1]["class_name"], "Functional");
  EXPECT_FALSE(k3["config"]["layers"][1].contains("inbound_nodes"));
  check_round_trips(model, {sample({3, 4}, 8)});
  // Without the InputLayer entry, the backbone's input builds the Sequential.
  json k2 = to_keras2(k3);
  k2["config"]["layers"].erase(0);
  auto rebuilt = model_from_config(k2);
  ASSERT_TRUE(rebuilt->built());
  expect_same_predictions(model, *rebuilt, {sample({3, 4}, 8)});
}
