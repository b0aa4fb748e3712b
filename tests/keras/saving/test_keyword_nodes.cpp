// Layer calls that pass tensors and options by keyword, saved and loaded as Keras does, against
// files made by real Keras 3 and tf_keras (tests/data/keras/sequence/keyword_layers.*, written by
// make_sequence_fixtures.py with the same three custom layers defined in Python): the nodes we
// write are Keras's own, Keras's files rebuild the same calls and predict Keras's outputs, and the
// files we save load in Keras and predict the same.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "keras/models/layer_order.h"
#include "keras/saving/detail/call_nodes.h"
#include "keras/saving/model_config.h"
#include "layers/keras_signature.h"
#include "tests/support/expect_error.h"
#include "tests/support/python.h"

using namespace keras;
using keras::testing::expect_error;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/sequence/";

// The test layers of make_sequence_fixtures.py, package "keras_cpp_test".
class KeywordScaleImpl : public Layer {  // (x + extra) * scale
 public:
  using Layer::Layer;
  std::string class_name() const override { return "KeywordScale"; }
  TensorList call(const TensorList& in, const CallContext& ctx) override {
    TensorList extra = ctx.keyword(in, "extra");
    Tensor y = extra.empty() ? in[0] : ops::add(in[0], extra[0]);
    return {ops::multiply(y, ctx.options.value("scale", 1.0))};
  }
};

class StateSumImpl : public Layer {  // x + sum(states)
 public:
  using Layer::Layer;
  std::string class_name() const override { return "StateSum"; }
  TensorList call(const TensorList& in, const CallContext& ctx) override {
    Tensor y = in[0];
    for (const auto& s : ctx.keyword(in, "states")) y = ops::add(y, s);
    return {y};
  }
};

class PairProductImpl : public Layer {  // a * b * scale, two positional tensors
 public:
  using Layer::Layer;
  std::string class_name() const override { return "PairProduct"; }
  TensorList call(const TensorList& in, const CallContext& ctx) override {
    return {ops::multiply(ops::multiply(in[0], in[1]), ctx.options.value("scale", 1.0))};
  }
};

template <class Impl>
LayerPtr from_config(const json& c) {
  return std::make_shared<Impl>(LayerOptions{c.value("name", ""), c.value("trainable", true), "float32"});
}

KERAS_REGISTER_CUSTOM_LAYER("keras_cpp_test", KeywordScale, from_config<KeywordScaleImpl>);
KERAS_REGISTER_CUSTOM_LAYER("keras_cpp_test", StateSum, from_config<StateSumImpl>);
KERAS_REGISTER_CUSTOM_LAYER("keras_cpp_test", PairProduct, from_config<PairProductImpl>);
KERAS_SIGNATURE(KeywordScale, .call_keywords = {"extra", "scale"});
KERAS_SIGNATURE(StateSum, .call_keywords = {"states"});
KERAS_SIGNATURE(PairProduct, .tensor_parameters = {"a", "b"}, .call_keywords = {"scale"});

// StateSum as tf_keras's RNN layers save it: the keyword's tensors folded into the input list.
class FoldedStateSumImpl : public StateSumImpl {
 public:
  using StateSumImpl::StateSumImpl;
  std::string class_name() const override { return "FoldedStateSum"; }
};
KERAS_REGISTER_CUSTOM_LAYER("keras_cpp_test", FoldedStateSum, from_config<FoldedStateSumImpl>);
KERAS_SIGNATURE(FoldedStateSum, .call_keywords = {"states"}, .legacy_list_keyword = "states");

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

const json& entry(const json& model, const std::string& name) {
  for (const auto& e : model.at("config").at("layers"))
    if (e.at("name") == name) return e;
  throw std::runtime_error("no layer " + name);
}

// The keyword_layers model of the generator, built here with the C++ call API.
std::shared_ptr<Model> keyword_model() {
  auto x = layers::Input({4}, {.name = "x"});
  auto e = layers::Input({4}, {.name = "e"});
  auto scaled = std::make_shared<KeywordScaleImpl>(LayerOptions{"scaled"});
  auto y = (*scaled)(std::vector<KerasTensor>{x, e}, {.keywords = {"extra"}, .options = {{"scale", 2.0}}})[0];
  y = (*std::make_shared<StateSumImpl>(LayerOptions{"summed"}))(std::vector<KerasTensor>{y, x, e}, {.keywords = {"states", "states"}})[0];
  y = (*std::make_shared<PairProductImpl>(LayerOptions{"paired"}))(std::vector<KerasTensor>{y, e}, {.options = {{"scale", 0.5}}})[0];
  auto negated = (*std::make_shared<KeywordScaleImpl>(LayerOptions{"negated"}))(e, {.options = {{"scale", -1.0}}});
  y = layers::Add({.name = "add"})({y, negated});
  return std::make_shared<Model>(std::vector<KerasTensor>{x, e},
                                 std::vector<KerasTensor>{layers::Dense({.units = 3, .name = "head"})(y)}, "keyword_layers");
}

TensorList inputs() { return {data::load_npy(kDir + "keyword_layers.input0.npy"), data::load_npy(kDir + "keyword_layers.input1.npy")}; }

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  auto a = got.contiguous().to_vector<float>(), b = want.contiguous().to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5 + 1e-5 * std::abs(b[i])) << what << " at " << i;
}

const char* const kLayers[] = {"scaled", "summed", "paired", "negated", "add", "head"};

}  // namespace

TEST(KeywordNodes, WrittenAsKeras3AndTfKerasWriteThem) {
  json k3 = read_json(kDir + "keyword_layers.k3.json"), k2 = read_json(kDir + "keyword_layers.k2.json");
  json ours = serialize_model(*keyword_model());
  json ours2 = to_keras2(ours);
  for (const char* name : kLayers) {
    EXPECT_EQ(entry(ours, name).at("inbound_nodes"), entry(k3, name).at("inbound_nodes")) << name;
    EXPECT_EQ(entry(ours2, name).at("inbound_nodes"), entry(k2, name).at("inbound_nodes")) << name;
  }
}

TEST(KeywordNodes, KerasFilesRebuildTheSameCallsAndPredictKerasOutputs) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"keyword_layers.keras", "k3"}, {"keyword_layers.k3.h5", "k3"}, {"keyword_layers.k2.h5", "k2"}};
  for (const auto& [file, gen] : files) {
    SCOPED_TRACE(file);
    auto model = load_model(kDir + file, {.compile = false});
    const auto& summed = *model->get_layer("summed")->inbound_nodes().at(0);
    EXPECT_EQ(summed.args.keywords, (std::vector<std::string>{"states", "states"}));
    EXPECT_EQ(summed.inputs.at(2).layer->name(), "e");
    const auto& paired = *model->get_layer("paired")->inbound_nodes().at(0);
    EXPECT_TRUE(paired.args.keywords.empty()) << "tf_keras's kwarg 'b' is PairProduct's second positional tensor";
    EXPECT_EQ(paired.inputs.size(), 2u);
    EXPECT_EQ(paired.args.options, json({{"scale", 0.5}}));
    EXPECT_EQ(model->get_layer("scaled")->inbound_nodes().at(0)->args.options, json({{"scale", 2.0}}));
    expect_close(model->predict_on_batch(inputs())[0], data::load_npy(kDir + "keyword_layers." + gen + ".output0.npy"), file);
    // Written back, the calls are the ones Keras wrote (tf_keras's file too, as Keras 3 nodes).
    json ours = serialize_model(*model);
    json k3 = read_json(kDir + "keyword_layers.k3.json");
    for (const char* name : kLayers) EXPECT_EQ(entry(ours, name).at("inbound_nodes"), entry(k3, name).at("inbound_nodes")) << name;
  }
  auto from_json = model_from_json(read_json(kDir + "keyword_layers.k3.json").dump());
  from_json->load_weights(kDir + "keyword_layers.weights.h5");
  expect_close(from_json->predict_on_batch(inputs())[0], data::load_npy(kDir + "keyword_layers.k3.output0.npy"), "json+weights");
}

TEST(KeywordNodes, LayerOrderWalksKeywordTensorsAsKerasFlattensKwargs) {
  // Keras's order of the layers (its config lists them in it) from a graph with keyword inputs.
  json k3 = read_json(kDir + "keyword_layers.k3.json");
  std::vector<std::string> keras_order, ours;
  for (const auto& e : k3["config"]["layers"]) keras_order.push_back(e["name"]);
  for (const auto& l : keyword_model()->layers()) ours.push_back(l->name());
  EXPECT_EQ(ours, keras_order);
  // tree.flatten((args, kwargs)): positional first, then kwargs by sorted name, a list in order.
  LayerNode node;
  node.inputs.resize(5);
  node.args.keywords = {"value", "key", "initial_state", "key"};
  EXPECT_EQ(detail::keras_input_order(node), (std::vector<size_t>{0, 3, 2, 4, 1}));
}

TEST(KeywordNodes, TensorParametersPassedByNameArePositionalOnceLoaded) {
  // PairProduct(a=x, b=e, scale=0.5), as Keras 3 writes a call that names every argument.
  json k3 = read_json(kDir + "keyword_layers.k3.json");
  json by_name = k3;
  for (auto& e : by_name["config"]["layers"])
    if (e["name"] == "paired") {
      json& node = e["inbound_nodes"][0];
      node["kwargs"]["a"] = node["args"][0];
      node["kwargs"]["b"] = node["args"][1];
      node["args"] = json::array();
    }
  auto model = model_from_config(by_name);
  const auto& paired = *model->get_layer("paired")->inbound_nodes().at(0);
  EXPECT_TRUE(paired.args.keywords.empty());
  ASSERT_EQ(paired.inputs.size(), 2u);
  EXPECT_EQ(paired.inputs[0].layer->name(), "summed");
  EXPECT_EQ(paired.inputs[1].layer->name(), "e");
  // tf_keras names every argument after the first one.
  EXPECT_EQ(entry(to_keras2(by_name), "paired").at("inbound_nodes"),
            entry(read_json(kDir + "keyword_layers.k2.json"), "paired").at("inbound_nodes"));
}

TEST(KeywordNodes, LegacyListKeywordTravelsInTheInputListOfKeras2Nodes) {
  auto x = layers::Input({4}, {.name = "x"});
  auto h = layers::Input({4}, {.name = "h"});
  auto c = layers::Input({4}, {.name = "c"});
  auto folded = std::make_shared<FoldedStateSumImpl>(LayerOptions{"folded"});
  auto y = (*folded)(std::vector<KerasTensor>{x, h, c}, {.keywords = {"states", "states"}})[0];
  Model model(std::vector<KerasTensor>{x, h, c}, std::vector<KerasTensor>{y});
  json k2 = to_keras2(serialize_model(model));
  EXPECT_EQ(entry(k2, "folded").at("inbound_nodes"), json::parse(R"([[["x", 0, 0, {}], ["h", 0, 0, {}], ["c", 0, 0, {}]]])"));
  auto rebuilt = model_from_config(k2);
  const auto& node = *rebuilt->get_layer("folded")->inbound_nodes().at(0);
  EXPECT_EQ(node.args.keywords, (std::vector<std::string>{"states", "states"}));
  EXPECT_EQ(serialize_model(*rebuilt), serialize_model(model));
  TensorList xs = {Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 4}), Tensor::from_vector(std::vector<float>{10, 20, 30, 40}, {1, 4}),
                   Tensor::from_vector(std::vector<float>{100, 200, 300, 400}, {1, 4})};
  EXPECT_EQ(rebuilt->predict_on_batch(xs)[0].to_vector<float>(), (std::vector<float>{111, 222, 333, 444}));
}

TEST(KeywordNodes, ArgumentsAClassDoesNotDeclareAreStillRefused) {
  json k3 = read_json(kDir + "keyword_layers.k3.json");
  json bad = k3;
  for (auto& e : bad["config"]["layers"])
    if (e["name"] == "head") e["inbound_nodes"][0]["kwargs"]["extra"] = entry(k3, "scaled")["inbound_nodes"][0]["kwargs"]["extra"];
  expect_error<NotImplementedError>([&] { model_from_config(bad); }, {"'head'", "'extra'", "only the call argument 'training'"});
  json unknown_option = k3;
  for (auto& e : unknown_option["config"]["layers"])
    if (e["name"] == "scaled") e["inbound_nodes"][0]["kwargs"]["offset"] = 1.0;
  expect_error<NotImplementedError>([&] { model_from_config(unknown_option); }, {"'offset'", "'extra', 'scale'"});
  json explicit_mask = k3;  // a mask that no recorded mask operation computed
  for (auto& e : explicit_mask["config"]["layers"])
    if (e["name"] == "head") e["inbound_nodes"][0]["kwargs"]["mask"] = entry(k3, "scaled")["inbound_nodes"][0]["kwargs"]["extra"];
  expect_error<NotImplementedError>([&] { model_from_config(explicit_mask); }, {"'mask'"});
  json k2 = read_json(kDir + "keyword_layers.k2.json");
  for (auto& e : k2["config"]["layers"])
    if (e["name"] == "negated") e["inbound_nodes"][0][0][3]["shift"] = json::array({"x", 0, 0});
  expect_error<NotImplementedError>([&] { model_from_config(k2); }, {"'shift'"});
}

TEST(KeywordNodes, RecordedMaskOperationsAreFoundInKeras3Configs) {
  // Keras 3 records propagated masks as `mask` kwargs computed by operation entries.
  EXPECT_EQ(detail::mask_operations(read_json(kDir + "text_classifier.k3.json")["config"]),
            (std::set<std::string>{"not_equal"}));
  EXPECT_EQ(detail::mask_operations(read_json(kDir + "transformer_block.k3.json")["config"]),
            (std::set<std::string>{"not_equal", "logical_or", "logical_or_1"}));
  EXPECT_TRUE(detail::mask_operations(read_json(kDir + "seq2seq.k3.json")["config"]).empty());
  EXPECT_TRUE(detail::mask_operations(read_json(kDir + "transformer_block.k2.json")["config"]).empty());
  // tf_keras computes masks itself: to_keras2 leaves the recorded ones out.
  json k2 = to_keras2(read_json(kDir + "text_classifier.k3.json"));
  std::vector<std::string> names;
  for (const auto& e : k2["config"]["layers"]) names.push_back(e["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"tokens", "embed", "lstm", "head"}));
  EXPECT_FALSE(entry(k2, "lstm")["inbound_nodes"][0][0][3].contains("mask"));
}

// Our .h5 is in the Keras 2 schema (keyword tensors as [layer, node, tensor] in the node kwargs):
// tf_keras reads it; Keras 3 cannot read keyword tensors of Keras 2 nodes (it passes the lists on
// as they are), nor tf_keras's own files of these models, so it is not asked to.
TEST(KeywordNodes, OurFilesLoadInKerasAndPredictTheSame) {
  auto model = load_model(kDir + "keyword_layers.keras", {.compile = false});
  const fs::path dir = fs::temp_directory_path() / ("keyword_nodes_" + std::to_string(getpid()));
  fs::create_directories(dir);
  model->save((dir / "ours.keras").string());
  model->save((dir / "ours.h5").string());
  data::save_npy((dir / "expected.npy").string(), model->predict_on_batch(inputs())[0]);
  const std::string code = R"PY(
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import keras, tf_keras
import make_sequence_fixtures as fixtures
d, data = sys.argv[2], sys.argv[3]
xs = [np.load(os.path.join(data, "keyword_layers.input%d.npy" % i)) for i in range(2)]
want = np.load(os.path.join(d, "expected.npy"))
result = {}
for label, load in [("keras3 ours.keras", lambda: keras.saving.load_model(os.path.join(d, "ours.keras"), custom_objects=fixtures.custom_layers(keras))),
                    ("tf_keras ours.h5", lambda: tf_keras.models.load_model(os.path.join(d, "ours.h5"), custom_objects=fixtures.custom_layers(tf_keras)))]:
    try:
        got = np.asarray(load().predict(xs, verbose=0))
        result[label] = float(np.max(np.abs(got - want))) if got.shape == want.shape else "shape %s" % (got.shape,)
    except Exception as e:
        result[label] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
print(json.dumps(result))
)PY";
  std::string skip;
  const std::string out = test_support::run_python(
      code, {std::string(KERAS_SOURCE_DIR) + "/tests/data/keras", dir.string(), kDir}, {"keras", "tf_keras"}, skip);
  fs::remove_all(dir);
  if (!skip.empty()) GTEST_SKIP() << skip << " (set KERAS_TEST_PYTHON=/work/keras-ref/bin/python)";
  ASSERT_FALSE(out.empty());
  json result = json::parse(out.substr(out.rfind('{')));
  ASSERT_EQ(result.size(), 2u) << out;
  for (const auto& [label, value] : result.items()) {
    ASSERT_TRUE(value.is_number()) << label << ": " << value;
    EXPECT_LE(value.get<double>(), 1e-5) << label;
  }
}
