// model_from_config on hand-written configs in the forms Keras 2 and Keras 3 write
// (keras-formats.md §4, forms checked against Keras 3.15 and tf_keras 2.21), and its errors.
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "layers/elementwise_merge.h"
#include "tests/support/expect_error.h"

using namespace keras;
namespace L = keras::layers;
using keras::testing::expect_error;

namespace {

std::vector<std::string> layer_names(const Model& m) {
  std::vector<std::string> out;
  for (const auto& l : m.layers()) out.push_back(l->name());
  return out;
}

const char* kKeras2Functional = R"({"class_name": "Functional", "keras_version": "2.15.0", "backend": "tensorflow",
 "config": {"name": "model", "trainable": true,
  "layers": [
   {"class_name": "InputLayer", "name": "input_1", "inbound_nodes": [],
    "config": {"batch_input_shape": [null, 4], "dtype": "float32", "sparse": false, "ragged": false, "name": "input_1"}},
   {"class_name": "Dense", "name": "dense", "inbound_nodes": [[["input_1", 0, 0, {}]]],
    "config": {"name": "dense", "trainable": true, "dtype": "float32", "units": 3, "activation": "relu",
     "use_bias": true, "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
     "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": null}}],
  "input_layers": [["input_1", 0, 0]], "output_layers": [["dense", 0, 0]]}})";

const char* kKeras3Functional = R"({"module": "keras.src.models.functional", "class_name": "Functional", "registered_name": "Functional",
 "build_config": {"input_shape": null},
 "config": {"name": "functional", "trainable": true,
  "layers": [
   {"module": "keras.layers", "class_name": "InputLayer", "registered_name": null, "name": "input_layer",
    "inbound_nodes": [], "config": {"batch_shape": [null, 4], "dtype": "float32", "sparse": false, "name": "input_layer"}},
   {"module": "keras.layers", "class_name": "Dense", "registered_name": null, "name": "dense",
    "build_config": {"input_shape": [null, 4]},
    "config": {"name": "dense", "trainable": true,
     "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
     "units": 3, "activation": "relu", "use_bias": true,
     "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null},
     "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
     "kernel_regularizer": null, "quantization_config": null},
    "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
       "config": {"shape": [null, 4], "dtype": "float32", "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]}],
  "input_layers": ["input_layer", 0, 0], "output_layers": ["dense", 0, 0]}})";

}  // namespace

TEST(ModelConfigRead, Keras2FunctionalFromTheSpec) {
  auto m = model_from_config(json::parse(kKeras2Functional));
  EXPECT_EQ(m->name(), "model");
  EXPECT_EQ(layer_names(*m), (std::vector<std::string>{"input_1", "dense"}));
  EXPECT_EQ(m->outputs()[0].shape, (Shape{-1, 3}));
  EXPECT_EQ(m->predict_on_batch(Tensor::ones({2, 4})).shape(), (Shape{2, 3}));
}

TEST(ModelConfigRead, Keras3FunctionalFromTheSpec) {
  auto m = model_from_config(json::parse(kKeras3Functional));
  EXPECT_EQ(layer_names(*m), (std::vector<std::string>{"input_layer", "dense"}));
  EXPECT_EQ(m->get_layer("dense")->get_config()["activation"], "relu");
  // Through text, as model_from_json.
  auto j = model_from_json(kKeras3Functional);
  EXPECT_EQ(serialize_model(*j), serialize_model(*m));
}

TEST(ModelConfigRead, OlderClassNamesAndModules) {
  json k2 = json::parse(kKeras2Functional);
  k2["class_name"] = "Model";  // older tf.keras
  EXPECT_EQ(layer_names(*model_from_config(k2)), (std::vector<std::string>{"input_1", "dense"}));
  json k3 = json::parse(kKeras3Functional);
  k3["module"] = "keras.src.engine.functional";  // tf.keras 2.15 .keras files
  EXPECT_EQ(layer_names(*model_from_config(k3)), (std::vector<std::string>{"input_layer", "dense"}));
}

TEST(ModelConfigRead, SequentialVariants) {
  // tf_keras: explicit "<first>_input" InputLayer, and batch_input_shape kept on the first layer.
  auto a = model_from_config(json::parse(R"({"class_name": "Sequential", "config": {"name": "seq", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 5], "dtype": "float32", "sparse": false,
      "ragged": false, "name": "dense_input"}},
    {"class_name": "Dense", "config": {"name": "dense", "trainable": true, "dtype": "float32",
      "batch_input_shape": [null, 5], "units": 2, "activation": "linear"}}]}})"));
  EXPECT_EQ(a->class_name(), "Sequential");
  EXPECT_EQ(a->inputs()[0].shape, (Shape{-1, 5}));
  // Keras <= 2.2: a bare list, the input shape only on the first layer.
  auto b = model_from_config(json::parse(R"({"class_name": "Sequential", "config": [
    {"class_name": "Dense", "config": {"name": "dense_1", "batch_input_shape": [null, 5], "units": 2}},
    {"class_name": "Activation", "config": {"name": "act", "activation": "softmax"}}]})"));
  EXPECT_EQ(b->outputs()[0].shape, (Shape{-1, 2}));
  EXPECT_EQ(layer_names(*b), (std::vector<std::string>{"dense_1", "act"}));
  // Keras 3 without an InputLayer but with build_input_shape.
  auto c = model_from_config(json::parse(R"({"module": "keras", "class_name": "Sequential", "registered_name": null,
    "config": {"name": "s3", "trainable": true, "dtype": "float32", "build_input_shape": [null, 7],
      "layers": [{"module": "keras.layers", "class_name": "Dense", "config": {"name": "d", "units": 1}, "registered_name": null}]}})"));
  EXPECT_EQ(c->inputs()[0].shape, (Shape{-1, 7}));
}

TEST(ModelConfigRead, Keras2ValueForms) {
  // List-valued BN axis, a dtype Policy object, string initializers, LeakyReLU alpha.
  auto m = model_from_config(json::parse(R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "name": "in", "inbound_nodes": [], "config": {"batch_input_shape": [null, 4, 4, 3], "name": "in"}},
    {"class_name": "BatchNormalization", "name": "bn", "inbound_nodes": [[["in", 0, 0, {}]]],
     "config": {"name": "bn", "axis": [3], "dtype": {"class_name": "Policy", "config": {"name": "float32"}},
                "gamma_initializer": "ones"}},
    {"class_name": "LeakyReLU", "name": "lr", "inbound_nodes": [[["bn", 0, 0, {}]]], "config": {"name": "lr", "alpha": 0.1}}],
    "input_layers": [["in", 0, 0]], "output_layers": [["lr", 0, 0]]}})"));
  EXPECT_EQ(m->get_layer("bn")->get_config()["axis"], 3);
  EXPECT_DOUBLE_EQ(m->get_layer("lr")->get_config()["negative_slope"].get<double>(), 0.1);
}

TEST(ModelConfigRead, Keras3NestedFunctionalFromKeras) {
  // As Keras 3.15 writes it: keras_history counts from 0, output_layers from 1 for a Functional.
  auto m = model_from_config(json::parse(R"({"module": "keras.src.models.functional", "class_name": "Functional",
   "registered_name": "Functional", "config": {"name": "outer", "trainable": true, "layers": [
    {"module": "keras.layers", "class_name": "InputLayer", "registered_name": null, "name": "a", "inbound_nodes": [],
     "config": {"batch_shape": [null, 3], "dtype": "float32", "sparse": false, "ragged": false, "name": "a", "optional": false}},
    {"module": "keras.src.models.functional", "class_name": "Functional", "registered_name": "Functional", "name": "inner",
     "config": {"name": "inner", "trainable": true, "layers": [
       {"module": "keras.layers", "class_name": "InputLayer", "registered_name": null, "name": "input_layer", "inbound_nodes": [],
        "config": {"batch_shape": [null, 3], "dtype": "float32", "name": "input_layer"}},
       {"module": "keras.layers", "class_name": "Dense", "registered_name": null, "name": "d_in", "config": {"name": "d_in", "units": 3},
        "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "dtype": "float32",
          "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]}],
      "input_layers": ["input_layer", 0, 0], "output_layers": ["d_in", 0, 0]},
     "inbound_nodes": [
      {"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "dtype": "float32", "keras_history": ["a", 0, 0]}}], "kwargs": {"mask": null}},
      {"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "dtype": "float32", "keras_history": ["inner", 0, 0]}}], "kwargs": {"mask": null}}]},
    {"module": "keras.layers", "class_name": "Concatenate", "registered_name": null, "name": "cat", "config": {"name": "cat", "axis": -1},
     "inbound_nodes": [{"args": [[
       {"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "dtype": "float32", "keras_history": ["inner", 0, 0]}},
       {"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "dtype": "float32", "keras_history": ["inner", 1, 0]}}]],
      "kwargs": {}}]}],
   "input_layers": [["a", 0, 0]], "output_layers": [["inner", 2, 0], ["cat", 0, 0]]}})"));
  auto inner = std::dynamic_pointer_cast<Model>(m->get_layer("inner"));
  ASSERT_TRUE(inner);
  inner->get_layer("d_in")->set_weights({Tensor::from_vector(std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3}),
                                         Tensor::from_vector(std::vector<float>{1, 1, 1})});
  TensorList out = m->predict_on_batch(TensorList{Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 4, 5}));  // inner(inner(a))
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{2, 3, 4, 3, 4, 5}));
}

TEST(ModelConfigRead, Keras2NestedModelsCountTheirOwnNodeFirst) {
  // As tf_keras writes it: the nested Functional's first outer call is node 1 everywhere.
  auto m = model_from_config(json::parse(R"({"class_name": "Functional", "config": {"name": "wrap", "trainable": true, "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "name": "xx"}, "name": "xx", "inbound_nodes": []},
    {"class_name": "Functional", "name": "inner", "inbound_nodes": [[["xx", 0, 0, {}]]], "config": {"name": "inner", "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "name": "input_1"}, "name": "input_1", "inbound_nodes": []},
      {"class_name": "Dense", "config": {"name": "dd", "units": 2}, "name": "dd", "inbound_nodes": [[["input_1", 0, 0, {}]]]}],
      "input_layers": [["input_1", 0, 0]], "output_layers": [["dd", 0, 0]]}},
    {"class_name": "Sequential", "name": "seq", "inbound_nodes": [[["inner", 1, 0, {}]]], "config": {"name": "seq", "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 2], "name": "input_2"}},
      {"class_name": "Dense", "config": {"name": "dense", "units": 3}}]}},
    {"class_name": "Dense", "name": "after", "config": {"name": "after", "units": 1}, "inbound_nodes": [[["seq", 1, 0, {}]]]}],
   "input_layers": [["xx", 0, 0]], "output_layers": [["after", 0, 0], ["seq", 1, 0], ["inner", 1, 0]]}})"));
  EXPECT_EQ(m->outputs().size(), 3u);
  EXPECT_EQ(m->outputs()[1].shape, (Shape{-1, 3}));
  EXPECT_EQ(m->outputs()[2].shape, (Shape{-1, 2}));
}

TEST(ModelConfigRead, SharedLayersAtDifferentDepthsNeedTheWorklist) {
  // y = A(B(A(B(x)))): A's second call needs B's second call, which comes later in the list.
  auto x = L::Input({3}, {.name = "x"});
  L::Dense a({.units = 3, .name = "A"}), b({.units = 3, .name = "B"});
  Model model(x, a(b(a(b(x)))), "deep");
  json k3 = serialize_model(model);
  for (const json& cfg : {k3, to_keras2(k3)}) {
    auto rebuilt = model_from_config(cfg);
    EXPECT_EQ(rebuilt->get_layer("A")->inbound_nodes().size(), 2u);
    rebuilt->set_weights(model.get_weights());
    Tensor in = random::normal({2, 3}, 0, 1, uint64_t{9});
    EXPECT_EQ(rebuilt->predict_on_batch(in).to_vector<float>(), model.predict_on_batch(in).to_vector<float>());
  }
}

TEST(ModelConfigRead, DictInputsAreOrderedByKey) {
  auto m = model_from_config(json::parse(R"({"class_name": "Functional", "config": {"name": "d", "layers": [
    {"class_name": "InputLayer", "name": "q", "inbound_nodes": [], "config": {"batch_shape": [null, 2], "name": "q"}},
    {"class_name": "InputLayer", "name": "p", "inbound_nodes": [], "config": {"batch_shape": [null, 3], "name": "p"}},
    {"class_name": "Concatenate", "name": "cat", "config": {"name": "cat"}, "inbound_nodes": [{"args": [[
      {"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "keras_history": ["p", 0, 0]}},
      {"class_name": "__keras_tensor__", "config": {"shape": [null, 2], "keras_history": ["q", 0, 0]}}]], "kwargs": {}}]}],
    "input_layers": {"q": ["q", 0, 0], "p": ["p", 0, 0]}, "output_layers": ["cat", 0, 0]}})"));
  ASSERT_EQ(m->inputs().size(), 2u);
  EXPECT_EQ(m->inputs()[0].layer->name(), "p");
  EXPECT_EQ(m->outputs()[0].shape, (Shape{-1, 5}));
}

TEST(ModelConfigRead, TrainingKwargIsReplayed) {
  auto m = model_from_config(json::parse(R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "name": "x", "inbound_nodes": [], "config": {"batch_input_shape": [null, 100], "name": "x"}},
    {"class_name": "Dropout", "name": "drop", "config": {"name": "drop", "rate": 0.5},
     "inbound_nodes": [[["x", 0, 0, {"training": true}]]]}],
    "input_layers": [["x", 0, 0]], "output_layers": [["drop", 0, 0]]}})"));
  EXPECT_EQ(m->get_layer("drop")->inbound_nodes()[0]->args.training, std::optional<bool>(true));
  auto v = m->predict_on_batch(Tensor::ones({1, 100})).to_vector<float>();
  int zeros = 0;
  for (float f : v) zeros += f == 0.0f;
  EXPECT_GT(zeros, 10);  // dropout ran in predict because the node says training=True
}

// ---- errors ----

TEST(ModelConfigErrors, WrongSchemaNamesTheEntry) {
  expect_error<ValueError>([] { model_from_config(json::array()); }, {"model_from_config", "class_name"});
  expect_error<ValueError>([] { model_from_config(json::parse(R"({"class_name": "Functional", "config": {"name": "m"}})")); },
                           {"'layers'"});
  expect_error<ValueError>([] { model_from_config(json::parse(R"({"class_name": "Sequential", "config": {"name": "m"}})")); },
                           {"'layers'"});
  expect_error<ValueError>(
      [] { model_from_config(json::parse(R"({"class_name": "Functional", "config": {"layers": 3, "input_layers": [], "output_layers": []}})")); },
      {"'layers'", "a list"});
  json bad = json::parse(kKeras2Functional);
  bad["config"]["layers"][1]["inbound_nodes"] = json::parse(R"([[["nowhere", 0, 0, {}]]])");
  expect_error<ValueError>([&] { model_from_config(bad); }, {"layers[1] ('dense') inbound_nodes[0]", "'nowhere'"});
  bad["config"]["layers"][1]["inbound_nodes"] = json::parse(R"([[["input_1", 3, 0, {}]]])");
  expect_error<ValueError>([&] { model_from_config(bad); }, {"inbound_nodes[0]", "node index"});
  bad["config"]["layers"][1]["inbound_nodes"] = json::parse(R"([[["input_1", 0, 2, {}]]])");
  expect_error<ValueError>([&] { model_from_config(bad); }, {"tensor index"});
  bad["config"]["layers"][1]["inbound_nodes"] = json::parse(R"([[["input_1", "zero", 0, {}]]])");
  expect_error<ValueError>([&] { model_from_config(bad); }, {"[layer_name, node_index, tensor_index]"});
  bad = json::parse(kKeras2Functional);
  bad["config"]["output_layers"] = json::parse(R"([["dense", 1, 0]])");
  expect_error<ValueError>([&] { model_from_config(bad); }, {"'output_layers'", "node index"});
  bad = json::parse(kKeras2Functional);
  bad["config"]["layers"][1]["name"] = "input_1";
  expect_error<ValueError>([&] { model_from_config(bad); }, {"unique layer names"});
}

TEST(ModelConfigErrors, CycleIsReported) {
  expect_error<ValueError>([] {
    model_from_config(json::parse(R"({"class_name": "Functional", "config": {"name": "m", "layers": [
      {"class_name": "InputLayer", "name": "x", "inbound_nodes": [], "config": {"batch_input_shape": [null, 2], "name": "x"}},
      {"class_name": "Dense", "name": "a", "config": {"name": "a", "units": 2}, "inbound_nodes": [[["b", 0, 0, {}]]]},
      {"class_name": "Dense", "name": "b", "config": {"name": "b", "units": 2}, "inbound_nodes": [[["a", 0, 0, {}]]]}],
      "input_layers": [["x", 0, 0]], "output_layers": [["b", 0, 0]]}})"));
  }, {"layers[1] ('a')", "cycle"});
}

TEST(ModelConfigErrors, UnknownClassListsRegisteredOnes) {
  json bad = json::parse(kKeras3Functional);
  bad["config"]["layers"][1]["class_name"] = "Lambda";
  expect_error<TypeError>([&] { model_from_config(bad); }, {"layers[1] ('dense')", "'Lambda'", "Dense", "Conv2D"});
  bad = json::parse(kKeras3Functional);
  bad["config"]["layers"][1]["config"].erase("units");
  expect_error<ValueError>([&] { model_from_config(bad); }, {"layers[1] ('dense')", "'units'"});
  expect_error<TypeError>([] { model_from_config(json::parse(R"({"class_name": "NoSuchModel", "config": {}})")); },
                          {"'NoSuchModel'"});
  expect_error<TypeError>([] { model_from_config(json::parse(R"({"class_name": "Dense", "config": {"units": 2}})")); },
                          {"a model class"});
}

TEST(ModelConfigErrors, UnreplayableCallArguments) {
  json bad = json::parse(kKeras3Functional);
  bad["config"]["layers"][1]["inbound_nodes"][0]["kwargs"] = json::parse(R"({"mask": [1, 0]})");
  expect_error<NotImplementedError>([&] { model_from_config(bad); }, {"'mask'"});
  bad = json::parse(kKeras3Functional);
  bad["config"]["layers"][1]["inbound_nodes"][0]["args"].push_back(json::parse(R"({"class_name": "__lambda__", "config": {"code": "x"}})"));
  expect_error<NotImplementedError>([&] { model_from_config(bad); }, {"__lambda__"});
}

TEST(ModelConfigErrors, JsonParseErrorNamesThePosition) {
  expect_error<ValueError>([] { model_from_json(R"({"class_name": "Functional", "config": )"); },
                           {"model_from_json", "byte"});
}

TEST(ModelConfigErrors, OpLayerAndSubclassedModelsCannotBeSerialized) {
  auto x = L::Input({3});
  auto y = L::Dense({.units = 3})(x);
  Model with_op(x, y * 2.0);
  expect_error<NotImplementedError>([&] { serialize_model(with_op); }, {"OpLayer", "Add"});

  class Subclassed : public Model {
   public:
    Subclassed() : Model("sub") { d_ = track(L::Dense({.units = 1})); }
    TensorList call(const TensorList& in, const CallContext&) override { return {d_(in[0])}; }

   private:
    L::Dense d_{{.units = 1}};
  };
  Subclassed sub;
  expect_error<TypeError>([&] { serialize_model(sub); }, {"subclassed model", "functional API"});
  auto x2 = L::Input({3});
  auto sub_ptr = std::make_shared<Subclassed>();
  Model outer(x2, (*sub_ptr)(x2));
  expect_error<TypeError>([&] { serialize_model(outer); }, {"'sub'", "subclassed model"});
}

TEST(ModelConfigErrors, Keras2CannotExpressRmsScaling) {
  auto x = L::Input({4});
  Model m(x, L::LayerNormalization()(x));
  json k3 = serialize_model(m);
  k3["config"]["layers"][1]["config"]["rms_scaling"] = true;  // a Keras 3 file may say so
  expect_error<ValueError>([&] { to_keras2(k3); }, {"layers[1]", "rms_scaling"});
  k3["config"]["layers"][1]["config"]["rms_scaling"] = false;
  EXPECT_FALSE(to_keras2(k3)["config"]["layers"][1]["config"].contains("rms_scaling"));
  expect_error<ValueError>([] { to_keras2(json::array()); }, {"to_keras2"});
}
