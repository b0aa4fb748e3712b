// Checks of a keras::applications model against what real Keras 3 wrote for the same
// constructor and arguments (tests/data/keras/applications/<Name>.k3.json.gz and
// <Name>.manifest.json.gz, made by make_applications.py with weights=None, classes=10 and the
// smallest input: 32x32, InceptionV3 75x75, Xception 71x71). A missing fixture skips the test
// (the fixtures are committed on main).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "keras/keras.h"
#include "tests/support/applications_fixtures.h"

namespace keras::testing::applications {

using json = nlohmann::json;

// The fixture `stem + suffix` parsed, or null when it is absent.
inline json fixture_json(const std::string& stem, const std::string& suffix) {
  const std::string path = find(stem, suffix);
  return path.empty() ? json() : json::parse(read_text(path));
}

#define KERAS_REQUIRE_FIXTURE(j, stem)                                                       \
  if ((j).is_null()) GTEST_SKIP() << "no fixture for " << (stem) << " in " << kDir         \
                                  << " (tests/data/keras/applications is committed on main)"

// Where `ours` and `keras` differ, as "path: ours vs keras" lines. Numbers are equal when they
// agree to 1e-6 relative (Keras writes Python floats, this framework C++ doubles: 1.001e-05 may
// come back as 1.0010000000000001e-05, 6.0 as 6); everything else must be identical.
inline void json_differences(const json& ours, const json& keras, const std::string& path,
                             std::vector<std::string>& out) {
  if (ours.is_number() && keras.is_number()) {
    const double a = ours.get<double>(), b = keras.get<double>();
    if (std::abs(a - b) > 1e-6 * std::max(std::abs(a), std::abs(b))) out.push_back(path + ": " + ours.dump() + " vs " + keras.dump());
    return;
  }
  if (ours.type() != keras.type()) {
    out.push_back(path + ": " + ours.dump().substr(0, 200) + " vs " + keras.dump().substr(0, 200));
    return;
  }
  if (ours.is_object()) {
    for (const auto& [key, value] : keras.items())
      if (!ours.contains(key)) out.push_back(path + "/" + key + ": missing (Keras: " + value.dump().substr(0, 200) + ")");
    for (const auto& [key, value] : ours.items())
      if (!keras.contains(key)) out.push_back(path + "/" + key + ": extra " + value.dump().substr(0, 200));
      else json_differences(value, keras[key], path + "/" + key, out);
  } else if (ours.is_array()) {
    if (ours.size() != keras.size()) {
      out.push_back(path + ": " + std::to_string(ours.size()) + " entries vs " + std::to_string(keras.size()));
      return;
    }
    for (size_t i = 0; i < ours.size(); ++i) json_differences(ours[i], keras[i], path + "/" + std::to_string(i), out);
  } else if (ours != keras) {
    out.push_back(path + ": " + ours.dump() + " vs " + keras.dump());
  }
}

// model.to_json() against Keras 3's to_json() for the same arguments, as JSON objects (floats
// normalised): every layer, its config and build_config, its inbound nodes with their kwargs,
// the model's inputs and outputs. Left out: only the top-level "compile_config" ({} for an
// uncompiled model), which Keras's Model.to_json adds and this framework's to_json writes only
// when compiled (compile configs belong to saving, keras/saving/compile_config.h).
inline void expect_config_matches_keras(const Model& model, const std::string& stem) {
  json keras = fixture_json(stem, ".k3.json");
  KERAS_REQUIRE_FIXTURE(keras, stem);
  const std::string text = model.to_json();
  if (const char* dir = std::getenv("KERAS_APPLICATIONS_DUMP"))  // for diffing by hand
    std::ofstream(std::string(dir) + "/" + stem + ".ours.json") << text;
  json ours = json::parse(text);
  keras.erase("compile_config");
  std::vector<std::string> diffs;
  json_differences(ours, keras, "", diffs);
  for (size_t i = 0; i < diffs.size() && i < 12; ++i) ADD_FAILURE() << stem << " config" << diffs[i];
  EXPECT_TRUE(diffs.empty()) << diffs.size() << " differences from Keras's config of " << stem;
}

// A Keras 3 variable path without the name scopes Keras may put before its layer: NASNet creates
// its cells under scopes ("normal_A_block_0/block_1/separable_conv_block_normal_left1_0/" before
// "separable_conv_1_normal_left1_0/depthwise_kernel"). This framework has no name scopes (a path
// is <layer>/<weight>); no file keys on them (.weights.h5 by layer, legacy .h5 by position).
inline std::string unscoped(const std::string& keras_path, const std::string& layer) {
  if (keras_path.starts_with(layer + "/")) return keras_path;
  const auto at = keras_path.rfind("/" + layer + "/");
  return at == std::string::npos ? keras_path : keras_path.substr(at + 1);
}

// model.layers() without the Keras 3 operation nodes (`x + 3.0`, `a + b`: layers here, kept out
// of model.layers by Keras, weightless, not in a legacy file's layer_names).
inline std::vector<LayerPtr> keras_model_layers(const Model& model) {
  std::vector<LayerPtr> out;
  for (const auto& l : model.layers()) {
    const auto* op = dynamic_cast<const layers::OpLayerImpl*>(l.get());
    if (!op || !op->keras_call()) out.push_back(l);
  }
  return out;
}

// A weight path as Keras 3 wrote it, up to its session-wide numbering of unnamed variables:
// the LayerScale weights of one ConvNeXt are "<layer>/variable", "<layer>/variable_1", ...; ours
// are all "<layer>/variable" (files pair weights by position or key, never by this name).
inline std::string keras_weight_path(std::string path) {
  const auto at = path.rfind("/variable_");
  if (at != std::string::npos && path.find_first_not_of("0123456789", at + 10) == std::string::npos &&
      at + 10 < path.size())
    path.resize(at + 9);
  return path;
}

// Layers (names, classes, order = model.layers, the layer_names of a legacy HDF5 file), each
// layer's weights in order (the weight_names a legacy HDF5 file pairs by position), and
// model.weights (paths, shapes, trainable) against the manifest Keras printed.
inline void expect_structure_matches_keras(const Model& model, const std::string& stem) {
  const json manifest = fixture_json(stem, ".manifest.json");
  KERAS_REQUIRE_FIXTURE(manifest, stem);
  const json& k = manifest.at("k3");
  const auto layers = keras_model_layers(model);
  std::vector<std::string> names;
  for (const auto& l : layers) names.push_back(l->name());
  ASSERT_EQ(names, k.at("h5_layer_names").get<std::vector<std::string>>()) << stem;
  for (const auto& entry : k.at("layers")) {
    if (!entry.contains("model_layers_index")) continue;
    const auto& layer = layers.at(entry.at("model_layers_index").get<size_t>());
    EXPECT_EQ(layer->class_name(), entry.at("class_name").get<std::string>()) << layer->name();
    std::vector<std::string> weight_names, theirs;
    for (const auto& w : layer->weights()) weight_names.push_back(w.path());
    for (const auto& n : entry.value("h5_weight_names", std::vector<std::string>{}))
      theirs.push_back(keras_weight_path(unscoped(n, layer->name())));
    EXPECT_EQ(weight_names, theirs) << layer->name();
  }
  const auto weights = model.weights();
  const auto& kw = k.at("weights");
  ASSERT_EQ(weights.size(), kw.size()) << stem;
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::string& path = weights[i].path();
    EXPECT_EQ(path, keras_weight_path(unscoped(kw[i].at("path").get<std::string>(), path.substr(0, path.rfind('/')))))
        << "weight " << i;
    EXPECT_EQ(weights[i].value().shape(), kw[i].at("shape").get<Shape>()) << weights[i].path();
    EXPECT_EQ(weights[i].trainable(), kw[i].at("trainable").get<bool>()) << weights[i].path();
  }
  EXPECT_EQ(model.count_params(), k.at("params").at("total").get<int64_t>()) << stem;
  // Keras's published weights files were written by Keras 2, and a legacy file pairs its
  // weighted layers by position: they must come in tf_keras's order, with its weight shapes (its
  // names may differ: input_1, ":0", DepthwiseConv2D's depthwise_kernel; and its weightless
  // layers: tf_keras writes operations as TFOpLambda layers, MobileNetV3's hard_swish as four).
  if (!manifest.contains("k2")) return;
  const json& k2 = manifest.at("k2");
  std::map<std::string, Shape> k2_shape;
  for (const auto& w : k2.at("weights")) k2_shape[w.at("name").get<std::string>()] = w.at("shape").get<Shape>();
  std::vector<Shape> theirs, ours;
  std::map<std::string, json> k2_layer;
  size_t their_weighted = 0, our_weighted = 0;
  for (const auto& entry : k2.at("layers")) k2_layer[entry.at("name").get<std::string>()] = entry;
  for (const auto& layer : k2.at("h5_layer_names")) {  // model.layers order, as the file
    const auto names = k2_layer.at(layer.get<std::string>()).value("h5_weight_names", std::vector<std::string>{});
    their_weighted += names.empty() ? 0 : 1;
    for (const auto& name : names) theirs.push_back(k2_shape.at(name));
  }
  for (const auto& l : layers) {
    our_weighted += l->weights().empty() ? 0 : 1;
    for (const auto& w : l->weights()) ours.push_back(w.value().shape());
  }
  EXPECT_EQ(ours, theirs) << stem << ": weight order of a Keras 2 legacy file";
  EXPECT_EQ(our_weighted, their_weighted) << stem << ": weighted layers of a Keras 2 legacy file";
}

// Both of the above: the model is the one Keras builds for the same arguments.
inline void expect_is_keras(const Model& model, const std::string& stem) {
  expect_config_matches_keras(model, stem);
  expect_structure_matches_keras(model, stem);
}

// include_top = false: pooling "avg" gives Keras's output shape and parameter count (manifest),
// "max" the same shape, "" the 4-D feature map with as many channels.
inline void expect_pooling_heads(const std::function<std::shared_ptr<Model>(const std::string&)>& build,
                                 const std::string& stem) {
  const json manifest = fixture_json(stem, ".manifest.json");
  KERAS_REQUIRE_FIXTURE(manifest, stem);
  const json& keras = manifest.at("k3").at("include_top_false_pooling_avg");
  Shape expected;
  for (const auto& d : keras.at("output_shape")) expected.push_back(d.is_null() ? -1 : d.get<int64_t>());
  {  // one model alive at a time: ConvNeXtXLarge holds 1.4 GB of weights
    auto avg = build("avg");
    EXPECT_EQ(avg->outputs()[0].shape, expected) << stem;
    EXPECT_EQ(avg->count_params(), keras.at("params").get<int64_t>()) << stem;
  }
  EXPECT_EQ(build("max")->outputs()[0].shape, expected) << stem;
  const Shape features = build("")->outputs()[0].shape;
  ASSERT_EQ(features.size(), 4u) << stem;
  EXPECT_EQ(features[3], expected[1]) << stem;
}

// A family's constructors by Keras name; each must build what Keras builds with
// input_shape, classes = 10 (expect_is_keras) and have Keras's pooling heads.
template <class Options>
using Constructors = std::vector<std::pair<std::string, std::function<std::shared_ptr<Model>(const Options&)>>>;

template <class Options>
void expect_family_is_keras(const Constructors<Options>& models, const Shape& input_shape) {
  for (const auto& [stem, build] : models) {
    SCOPED_TRACE(stem);
    Options top;  // assigned, not designated: the MobileNets take input_shape first
    top.input_shape = input_shape;
    top.classes = 10;
    expect_is_keras(*build(top), stem);
    expect_pooling_heads([&](const std::string& p) {
      Options features = top;
      features.include_top = false;
      features.pooling = p;
      return build(features);
    }, stem);
  }
}

// The weighted tiny fixture `stem`: each weights file Keras wrote for it (tf_keras's weights-only
// and whole-model .h5, Keras 3's whole-model .h5 and .weights.h5), loaded by topology through `build(path)` (a
// constructor with the fixture's arguments and weights = path), predicts on the fixture's input
// what that Keras predicted, within 1e-5. A missing fixture skips the test.
inline void expect_loads_keras_weights(const std::string& stem,
                                       const std::function<std::shared_ptr<Model>(const std::string&)>& build) {
  const std::pair<const char*, const char*> files[] = {{".k2.weights_only.h5", ".k2.output0.npy"},
                                                       {".k2.h5", ".k2.output0.npy"},
                                                       {".k3.h5", ".k3.output0.npy"},
                                                       {".weights.h5", ".k3.output0.npy"}};
  for (const auto& [file, output] : files) {
    if (!std::filesystem::exists(kDir + stem + file)) GTEST_SKIP() << "no " << kDir + stem + file;
    SCOPED_TRACE(stem + file);
    auto model = build(kDir + stem + file);
    const Tensor y = model->predict(data::load_npy(kDir + stem + ".input0.npy")).contiguous();
    const Tensor k = data::load_npy(kDir + stem + output).contiguous();
    ASSERT_EQ(y.shape(), k.shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      EXPECT_NEAR(y.data<float>()[i], k.data<float>()[i], 1e-5 + 1e-5 * std::abs(k.data<float>()[i])) << i;
  }
}

// Every element of `x` within 1e-6 (relative) of `expected` (values computed by real Keras).
inline void expect_values(const Tensor& x, const std::vector<double>& expected) {
  const Tensor c = x.astype(DType::float64).contiguous();
  ASSERT_EQ(c.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(c.data<double>()[i], expected[i], 1e-6 * std::max(1.0, std::abs(expected[i]))) << "element " << i;
}

}  // namespace keras::testing::applications
