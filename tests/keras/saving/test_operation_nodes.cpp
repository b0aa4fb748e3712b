// Keras 3 operation nodes and tf_keras TFOpLambda layers in model configs: MobileNetV3's hard
// sigmoid, relu6(x + 3) * (1/6), written by Keras 3 as operations Add(x, 3.0) / Multiply(y, 1/6)
// and by tf_keras as TFOpLambda layers f(x, y=3.0), and ConvNeXt's residual add, a TFOpLambda whose
// y is a tensor. Both read, predict x * relu6(x + 3) / 6 = hard_silu(x), write back Keras 3's exact
// entries, become TFOpLambda layers in the Keras 2 schema, and bad entries are named.
#include <gtest/gtest.h>

#include "backend/random.h"
#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "support/expect_error.h"

using namespace keras;
using keras::testing::expect_error;

namespace {

// The squeeze-excite hard-swish of MobileNetV3Small.k3.json.gz (Keras 3.15.1), on a (None, 2, 2, 4)
// input: entries copied from the fixture, shapes narrowed to 4 channels.
const char* kKeras3 = R"({"module": "keras.src.models.functional", "class_name": "Functional",
 "registered_name": "Functional", "build_config": {"input_shape": null}, "config": {"name": "hs", "trainable": true,
 "layers": [
  {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 2, 2, 4], "dtype": "float32",
   "sparse": false, "ragged": false, "name": "inp", "optional": false}, "registered_name": null, "name": "inp", "inbound_nodes": []},
  {"module": "keras.src.ops.numpy", "class_name": "Add", "config": {"name": "add"}, "registered_name": "Add", "name": "add",
   "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 2, 2, 4], "dtype": "float32",
   "keras_history": ["inp", 0, 0]}}, 3.0], "kwargs": {}}]},
  {"module": "keras.layers", "class_name": "ReLU", "config": {"name": "re_lu_1", "trainable": true, "dtype": {"module": "keras",
   "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "max_value": 6.0,
   "negative_slope": 0.0, "threshold": 0.0}, "registered_name": null, "name": "re_lu_1", "inbound_nodes": [{"args": [
   {"class_name": "__keras_tensor__", "config": {"shape": [null, 2, 2, 4], "dtype": "float32", "keras_history": ["add", 0, 0]}}],
   "kwargs": {}}]},
  {"module": "keras.src.ops.numpy", "class_name": "Multiply", "config": {"name": "multiply"}, "registered_name": "Multiply",
   "name": "multiply", "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 2, 2, 4],
   "dtype": "float32", "keras_history": ["re_lu_1", 0, 0]}}, 0.16666666666666666], "kwargs": {}}]},
  {"module": "keras.layers", "class_name": "Multiply", "config": {"name": "mul", "trainable": true, "dtype": {"module": "keras",
   "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}}, "registered_name": null, "name": "mul",
   "inbound_nodes": [{"args": [[{"class_name": "__keras_tensor__", "config": {"shape": [null, 2, 2, 4], "dtype": "float32",
   "keras_history": ["inp", 0, 0]}}, {"class_name": "__keras_tensor__", "config": {"shape": [null, 2, 2, 4], "dtype": "float32",
   "keras_history": ["multiply", 0, 0]}}]], "kwargs": {}}]}],
 "input_layers": [["inp", 0, 0]], "output_layers": [["mul", 0, 0]]}})";

// The same block as tf_keras 2.21 writes it (MobileNetV3Small.k2.json.gz): TFOpLambda layers whose
// node is the first argument itself, the constant in kwargs "y".
const char* kKeras2 = R"({"class_name": "Functional", "config": {"name": "hs", "trainable": true, "layers": [
  {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_input_shape": [null, 2, 2, 4], "dtype": "float32",
   "sparse": false, "ragged": false, "name": "inp"}, "registered_name": null, "name": "inp", "inbound_nodes": []},
  {"module": "tf_keras.src.layers.core.tf_op_layer", "class_name": "TFOpLambda", "config": {"name": "tf.__operators__.add",
   "trainable": true, "dtype": "float32", "function": "__operators__.add"}, "registered_name": "TFOpLambda",
   "build_config": {"input_shape": [null, 2, 2, 4]}, "name": "tf.__operators__.add",
   "inbound_nodes": [["inp", 0, 0, {"y": 3.0, "name": null}]]},
  {"module": "keras.layers", "class_name": "ReLU", "config": {"name": "re_lu", "trainable": true, "dtype": "float32",
   "max_value": 6.0, "negative_slope": 0.0, "threshold": 0.0}, "registered_name": null, "name": "re_lu",
   "inbound_nodes": [[["tf.__operators__.add", 0, 0, {}]]]},
  {"module": "tf_keras.src.layers.core.tf_op_layer", "class_name": "TFOpLambda", "config": {"name": "tf.math.multiply",
   "trainable": true, "dtype": "float32", "function": "math.multiply"}, "registered_name": "TFOpLambda",
   "name": "tf.math.multiply", "inbound_nodes": [["re_lu", 0, 0, {"y": 0.16666666666666666, "name": null}]]},
  {"module": "keras.layers", "class_name": "Multiply", "config": {"name": "mul", "trainable": true, "dtype": "float32"},
   "registered_name": null, "name": "mul", "inbound_nodes": [[["inp", 0, 0, {}], ["tf.math.multiply", 0, 0, {}]]]}],
 "input_layers": [["inp", 0, 0]], "output_layers": [["mul", 0, 0]]}, "keras_version": "2.21.0", "backend": "tensorflow"})";

Tensor input() { return random::normal({3, 2, 2, 4}, 0, 3, uint64_t{9}); }

void expect_hard_swish(Model& model, const std::string& tag) {
  Tensor x = input();
  auto got = model.predict(x).to_vector<float>(), xv = x.to_vector<float>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const double v = xv[i], want = v * std::min(std::max(v + 3, 0.0), 6.0) / 6;
    ASSERT_NEAR(got[i], want, 1e-5 * (1 + std::abs(want))) << tag << " element " << i;
  }
}

// The layer entries of a Functional object by name.
json entry(const json& model, const std::string& name) {
  for (const auto& e : model["config"]["layers"])
    if (e["name"] == name) return e;
  ADD_FAILURE() << "no entry " << name;
  return json();
}

}  // namespace

TEST(OperationNodes, Keras3OperationsReadPredictAndWriteBackExactly) {
  const json k3 = json::parse(kKeras3);
  auto model = model_from_config(k3);
  EXPECT_EQ(model->get_layer("add")->class_name(), "Add");  // as the manifest lists Keras's layers
  expect_hard_swish(*model, "Keras 3");
  const json ours = serialize_model(*model);
  for (const char* name : {"add", "multiply"}) EXPECT_EQ(entry(ours, name), entry(k3, name)) << name;
  auto again = model_from_config(json::parse(ours.dump()));
  expect_hard_swish(*again, "Keras 3 written back");
}

TEST(OperationNodes, TfOpLambdaLayersRead) {
  auto model = model_from_config(json::parse(kKeras2));
  EXPECT_EQ(model->get_layer("tf.__operators__.add")->class_name(), "TFOpLambda");
  EXPECT_EQ(model->layers().size(), 5u);
  expect_hard_swish(*model, "tf_keras");
  // Written as the Keras 3 operations they are; the names stay.
  const json ours = serialize_model(*model);
  json add = entry(ours, "tf.__operators__.add");
  EXPECT_EQ(add["module"], "keras.src.ops.numpy");
  EXPECT_EQ(add["class_name"], "Add");
  EXPECT_EQ(add["registered_name"], "Add");
  EXPECT_EQ(add["config"], json({{"name", "tf.__operators__.add"}}));
  EXPECT_EQ(add["inbound_nodes"][0]["args"][1], 3.0);
  EXPECT_FALSE(add.contains("build_config"));
  EXPECT_EQ(entry(ours, "tf.math.multiply")["inbound_nodes"][0]["args"][1], 0.16666666666666666);
}

// Keras 3's legacy .h5 (tiny_mobilenet_v3_small.k3.h5 model_config) writes the operation entries
// without module and registered_name; Keras 3 cannot load that file, this reader can. Merge layers
// of the same class names keep their trainable and dtype keys, so they are not taken for operations.
TEST(OperationNodes, Keras3LegacyH5EntriesWithoutModuleRead) {
  json k3 = json::parse(kKeras3);
  for (auto& e : k3["config"]["layers"]) {
    e.erase("module");
    e.erase("registered_name");
  }
  auto model = model_from_config(k3);
  EXPECT_EQ(model->get_layer("add")->class_name(), "Add");
  EXPECT_EQ(model->get_layer("mul")->class_name(), "Multiply");
  expect_hard_swish(*model, "Keras 3 legacy .h5");
  EXPECT_EQ(entry(serialize_model(*model), "multiply"), entry(json::parse(kKeras3), "multiply"));
}

// The Keras 2 schema (legacy .h5) has no operation nodes: they become the TFOpLambda layers
// tf_keras writes, node for node.
TEST(OperationNodes, Keras2SchemaWritesTfOpLambdaLayers) {
  const json k2 = to_keras2(serialize_model(*model_from_config(json::parse(kKeras2))));
  const json theirs = json::parse(kKeras2);
  for (const char* name : {"tf.__operators__.add", "tf.math.multiply"}) {
    const json e = entry(k2, name), t = entry(theirs, name);
    EXPECT_EQ(e["class_name"], "TFOpLambda") << name;
    EXPECT_EQ(e["config"], t["config"]) << name;
    EXPECT_EQ(e["inbound_nodes"], t["inbound_nodes"]) << name;
  }
  auto back = model_from_config(json::parse(k2.dump()));
  expect_hard_swish(*back, "Keras 2 schema");
}

// ConvNeXt (tf_keras): x + y with y a tensor in kwargs, x the output of a nested Sequential (node
// index 1 in Keras 2 references); and a constant first argument, 2.0 - x, as tf_keras writes it.
TEST(OperationNodes, TensorKwargsNestedModelsAndConstantFirst) {
  const json k2 = json::parse(R"({"class_name": "Functional", "config": {"name": "res", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 3], "dtype": "float32", "name": "inp"},
     "name": "inp", "inbound_nodes": []},
    {"class_name": "Sequential", "config": {"name": "stem", "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 3], "dtype": "float32", "name": "stem_input"}},
      {"class_name": "Dense", "config": {"name": "d", "units": 3, "use_bias": false}}]},
     "name": "stem", "inbound_nodes": [[["inp", 0, 0, {}]]]},
    {"class_name": "Activation", "config": {"name": "identity", "activation": "linear"}, "name": "identity",
     "inbound_nodes": [[["stem", 1, 0, {}]]]},
    {"class_name": "TFOpLambda", "config": {"name": "tf.__operators__.add", "trainable": true, "dtype": "float32",
     "function": "__operators__.add"}, "name": "tf.__operators__.add",
     "inbound_nodes": [["stem", 1, 0, {"y": ["identity", 0, 0], "name": null}]]},
    {"class_name": "TFOpLambda", "config": {"name": "tf.math.subtract", "trainable": true, "dtype": "float32",
     "function": "math.subtract"}, "name": "tf.math.subtract",
     "inbound_nodes": [["_CONSTANT_VALUE", -1, 2.0, {"y": ["tf.__operators__.add", 0, 0], "name": null}]]}],
   "input_layers": [["inp", 0, 0]], "output_layers": [["tf.math.subtract", 0, 0]]}})");
  auto model = model_from_config(k2);
  Tensor x = random::normal({2, 3}, 0, 1, uint64_t{4});
  Tensor dense = ops::matmul(x, model->get_layer("stem")->weights()[0].value());
  auto want = ops::subtract(Tensor::full({2, 3}, 2.0), ops::multiply(dense, 2.0)).to_vector<float>();
  auto got = model->predict(x).to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  // Keras 3 writes 2.0 - x as Subtract with args [2.0, x]; Keras 2 gets the tf_keras form back.
  const json k3 = serialize_model(*model);
  EXPECT_EQ(entry(k3, "tf.math.subtract")["inbound_nodes"][0]["args"][0], 2.0);
  EXPECT_EQ(entry(k3, "tf.math.subtract")["class_name"], "Subtract");
  const json back2 = to_keras2(k3);
  EXPECT_EQ(entry(back2, "tf.math.subtract")["inbound_nodes"], entry(k2, "tf.math.subtract")["inbound_nodes"]);
  EXPECT_EQ(entry(back2, "tf.__operators__.add")["inbound_nodes"], entry(k2, "tf.__operators__.add")["inbound_nodes"]);
}

TEST(OperationNodes, ErrorsNameTheFunctionAndTheLayer) {
  json bad = json::parse(kKeras2);
  bad["config"]["layers"][1]["config"]["function"] = "math.reduce_mean";
  expect_error<TypeError>([&] { model_from_config(bad); }, {"'tf.__operators__.add'", "'math.reduce_mean'", "math.multiply"});
  bad = json::parse(kKeras2);
  bad["config"]["layers"][1]["inbound_nodes"][0][3]["z"] = 1;
  expect_error<NotImplementedError>([&] { model_from_config(bad); }, {"'tf.__operators__.add'", "kwargs 'z'"});
  bad = json::parse(kKeras2);
  bad["config"]["layers"][1]["inbound_nodes"][0] = "inp";
  expect_error<ValueError>([&] { model_from_config(bad); }, {"'tf.__operators__.add'", "_CONSTANT_VALUE"});
  bad = json::parse(kKeras2);
  bad["config"]["layers"][1]["config"].erase("function");
  expect_error<ValueError>([&] { model_from_config(bad); }, {"'tf.__operators__.add'", "'function'"});

  bad = json::parse(kKeras3);
  bad["config"]["layers"][1]["class_name"] = "Einsum";
  expect_error<TypeError>([&] { model_from_config(bad); }, {"'add'", "keras.src.ops.numpy.Einsum"});
  bad = json::parse(kKeras3);
  bad["config"]["layers"][1]["inbound_nodes"][0]["args"][1] = "three";
  expect_error<NotImplementedError>([&] { model_from_config(bad); }, {"'add'", "args[1]", "a tensor or a number"});
  bad = json::parse(kKeras3);
  bad["config"]["layers"][1]["inbound_nodes"].push_back(bad["config"]["layers"][1]["inbound_nodes"][0]);
  bad["config"]["layers"][1]["inbound_nodes"][1]["args"][1] = 4.0;
  expect_error<NotImplementedError>([&] { model_from_config(bad); }, {"'add'", "different constants"});
  bad = json::parse(kKeras3);
  bad["config"]["layers"][1]["inbound_nodes"] = json::array();
  expect_error<ValueError>([&] { model_from_config(bad); }, {"'add'", "the operation's call"});
}
