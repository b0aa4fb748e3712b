// keras::inspect_file against the real Keras fixtures (tests/data/keras, made by Keras 3.15 and
// tf_keras 2.21). Expected datasets (path, shape, dtype) and counts were read with h5py:
//   h5py.File(f).visititems(...) on each file (model.weights.h5 for a .keras).
// Also files built here (other dtypes, tf_keras's tree variant, non-Keras HDF5), the error
// cases, the text report and, when it is built, the keras-inspect binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "backend/errors.h"
#include "backend/tensor.h"
#include "keras/utils/zip.h"
#include "keras/utils/file_util.h"
#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/inspect.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using keras::inspect_file;

namespace {

std::string fixture(const std::string& name) { return std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/" + name; }

// h5py's rendering: "/path (8,16) float32", "(16,)", "()".
std::string line(const json& entry) {
  std::string shape = "(";
  for (size_t i = 0; i < entry["shape"].size(); ++i) shape += (i ? "," : "") + entry["shape"][i].dump();
  shape += entry["shape"].size() == 1 ? ",)" : ")";
  return entry["path"].get<std::string>() + " " + shape + " " + entry["dtype"].get<std::string>();
}

// Every dataset the description lists (weights and optimizer variables), sorted as h5py's walk.
std::vector<std::string> all_lines(const json& d) {
  std::vector<std::string> out;
  for (const auto& w : d["weights"]) out.push_back(line(w));
  if (d["optimizer"].is_object())
    for (const auto& v : d["optimizer"]["variables"]) out.push_back(line(v));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> field(const json& list, const char* key) {
  std::vector<std::string> out;
  for (const auto& e : list) out.push_back(e[key].is_null() ? "null" : e[key].is_string() ? e[key].get<std::string>() : e[key].dump());
  return out;
}

class TempDir {
 public:
  TempDir() : dir_(fs::temp_directory_path() / ("keras_inspect_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

// The exception message of `f`, checking its type; "" when nothing was thrown.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Inspect, EveryFixtureListsAsManyDatasetsAsH5pySees) {
  // h5py dataset counts for .keras (model.weights.h5), .k2.h5, .k3.h5, .weights.h5, .k2.weights_only.h5.
  const std::vector<std::pair<std::string, std::vector<size_t>>> counts = {
      {"mlp", {14, 13, 14, 14, 4}},           {"cnn", {37, 36, 37, 37, 13}},
      {"frozen", {28, 27, 28, 28, 14}},        {"nested", {28, 27, 28, 28, 10}},
      {"nested_frozen", {20, 19, 20, 20, 10}}, {"nested_seq", {28, 27, 28, 28, 10}},
      {"nested_shared", {26, 25, 26, 26, 8}},  {"two_inputs", {14, 13, 14, 14, 4}}};
  const std::vector<std::pair<std::string, std::string>> kinds = {{".keras", "keras"},
                                                                  {".k2.h5", "h5"},
                                                                  {".k3.h5", "h5"},
                                                                  {".weights.h5", "weights.h5"},
                                                                  {".k2.weights_only.h5", "legacy_weights.h5"}};
  for (const auto& [model, expected] : counts) {
    for (size_t k = 0; k < kinds.size(); ++k) {
      const std::string name = model + kinds[k].first;
      SCOPED_TRACE(name);
      json d = inspect_file(fixture(name));
      EXPECT_EQ(d["kind"], kinds[k].second);
      auto lines = all_lines(d);
      EXPECT_EQ(lines.size(), expected[k]);
      EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()).size(), lines.size()) << "a dataset listed twice";
      for (const auto& w : d["weights"]) EXPECT_EQ(w["dtype"], "float32") << w["path"];
    }
  }
}

TEST(Inspect, MlpInEveryKindMatchesH5pyExactly) {
  const std::vector<std::string> tree = {
      "/layers/dense/vars/0 (8,16) float32",   "/layers/dense/vars/1 (16,) float32",
      "/layers/dense_1/vars/0 (16,4) float32", "/layers/dense_1/vars/1 (4,) float32",
      "/optimizer/vars/0 () int64",            "/optimizer/vars/1 () float32",
      "/optimizer/vars/2 (8,16) float32",      "/optimizer/vars/3 (8,16) float32",
      "/optimizer/vars/4 (16,) float32",       "/optimizer/vars/5 (16,) float32",
      "/optimizer/vars/6 (16,4) float32",      "/optimizer/vars/7 (16,4) float32",
      "/optimizer/vars/8 (4,) float32",        "/optimizer/vars/9 (4,) float32"};
  EXPECT_EQ(all_lines(inspect_file(fixture("mlp.keras"))), tree);
  EXPECT_EQ(all_lines(inspect_file(fixture("mlp.weights.h5"))), tree);
  EXPECT_EQ(all_lines(inspect_file(fixture("mlp.k2.h5"))),
            (std::vector<std::string>{"/model_weights/dense/dense/bias:0 (16,) float32",
                                      "/model_weights/dense/dense/kernel:0 (8,16) float32",
                                      "/model_weights/dense_1/dense_1/bias:0 (4,) float32",
                                      "/model_weights/dense_1/dense_1/kernel:0 (16,4) float32",
                                      "/optimizer_weights/Adam/m/dense/bias:0 (16,) float32",
                                      "/optimizer_weights/Adam/m/dense/kernel:0 (8,16) float32",
                                      "/optimizer_weights/Adam/m/dense_1/bias:0 (4,) float32",
                                      "/optimizer_weights/Adam/m/dense_1/kernel:0 (16,4) float32",
                                      "/optimizer_weights/Adam/v/dense/bias:0 (16,) float32",
                                      "/optimizer_weights/Adam/v/dense/kernel:0 (8,16) float32",
                                      "/optimizer_weights/Adam/v/dense_1/bias:0 (4,) float32",
                                      "/optimizer_weights/Adam/v/dense_1/kernel:0 (16,4) float32",
                                      "/optimizer_weights/iteration:0 () int64"}));
  EXPECT_EQ(all_lines(inspect_file(fixture("mlp.k3.h5"))),
            (std::vector<std::string>{"/model_weights/dense/mlp/dense/bias (16,) float32",
                                      "/model_weights/dense/mlp/dense/kernel (8,16) float32",
                                      "/model_weights/dense_1/mlp/dense_1/bias (4,) float32",
                                      "/model_weights/dense_1/mlp/dense_1/kernel (16,4) float32",
                                      "/optimizer_weights/adam/iteration () int64",
                                      "/optimizer_weights/adam/learning_rate () float32",
                                      "/optimizer_weights/adam/mlp_dense_1_bias_momentum (4,) float32",
                                      "/optimizer_weights/adam/mlp_dense_1_bias_velocity (4,) float32",
                                      "/optimizer_weights/adam/mlp_dense_1_kernel_momentum (16,4) float32",
                                      "/optimizer_weights/adam/mlp_dense_1_kernel_velocity (16,4) float32",
                                      "/optimizer_weights/adam/mlp_dense_bias_momentum (16,) float32",
                                      "/optimizer_weights/adam/mlp_dense_bias_velocity (16,) float32",
                                      "/optimizer_weights/adam/mlp_dense_kernel_momentum (8,16) float32",
                                      "/optimizer_weights/adam/mlp_dense_kernel_velocity (8,16) float32"}));
  EXPECT_EQ(all_lines(inspect_file(fixture("mlp.k2.weights_only.h5"))),
            (std::vector<std::string>{"/dense/dense/bias:0 (16,) float32", "/dense/dense/kernel:0 (8,16) float32",
                                      "/dense_1/dense_1/bias:0 (4,) float32", "/dense_1/dense_1/kernel:0 (16,4) float32"}));
}

TEST(Inspect, KerasArchiveNamesLayersFromTheConfigAndMapsThemToTheTree) {
  json d = inspect_file(fixture("nested.keras"));
  EXPECT_EQ(d["keras_version"], "3.15.1");
  EXPECT_TRUE(d["backend"].is_null());  // metadata.json records none
  EXPECT_TRUE(d["date_saved"].is_string());
  EXPECT_EQ(d["model"], json({{"class_name", "Functional"}, {"name", "nested"}}));
  EXPECT_EQ(field(d["layers"], "path"),
            (std::vector<std::string>{"image", "backbone", "backbone/backbone_in", "backbone/backbone_conv",
                                      "backbone/backbone_bn", "backbone/backbone_relu", "backbone/backbone_gap",
                                      "backbone/backbone_dense", "head"}));
  EXPECT_EQ(field(d["layers"], "class_name"),
            (std::vector<std::string>{"InputLayer", "Functional", "InputLayer", "Conv2D", "BatchNormalization",
                                      "Activation", "GlobalAveragePooling2D", "Dense", "Dense"}));
  EXPECT_EQ(d["layers"][3]["hdf5_path"], "/layers/functional/layers/conv2d");
  EXPECT_EQ(d["layers"][3]["depth"], 1);
  EXPECT_EQ(d["layers"][8]["hdf5_path"], "/layers/dense");
  EXPECT_TRUE(d["layers"][0]["trainable"].is_null());
  EXPECT_EQ(d["layers"][3]["trainable"], true);
  // Weights in model order, the layer named by the tree's vars@name.
  ASSERT_EQ(d["weights"].size(), 10u);
  EXPECT_EQ(line(d["weights"][0]), "/layers/functional/layers/conv2d/vars/0 (3,3,3,4) float32");
  EXPECT_EQ(d["weights"][0]["layer"], "backbone/backbone_conv");
  EXPECT_EQ(d["weights"][0]["index"], 0);
  EXPECT_TRUE(d["weights"][0]["name"].is_null());
  EXPECT_EQ(line(d["weights"][5]), "/layers/functional/layers/batch_normalization/vars/3 (4,) float32");
  EXPECT_EQ(line(d["weights"][9]), "/layers/dense/vars/1 (4,) float32");
  EXPECT_EQ(d["weights"][9]["layer"], "head");
  // Optimizer from compile_config, its variables from optimizer/vars.
  const json& opt = d["optimizer"];
  EXPECT_EQ(opt["class_name"], "Adam");
  EXPECT_EQ(opt["name"], "adam");
  EXPECT_DOUBLE_EQ(opt["config"]["beta_2"].get<double>(), 0.999);
  ASSERT_EQ(opt["variables"].size(), 18u);
  EXPECT_EQ(line(opt["variables"][0]), "/optimizer/vars/0 () int64");
  EXPECT_EQ(opt["variables"][0]["name"], "iteration");
  EXPECT_EQ(opt["variables"][1]["name"], "learning_rate");
  EXPECT_EQ(line(opt["variables"][10]), "/optimizer/vars/10 (4,8) float32");  // numeric order, not "10" < "2"
  EXPECT_TRUE(opt["variables"][10]["name"].is_null());
  EXPECT_EQ(d["compile_config"]["loss"], "sparse_categorical_crossentropy");
  EXPECT_EQ(d["compile_config"]["metrics"], json::array({"accuracy"}));
}

TEST(Inspect, Keras2H5KeepsLayerAndWeightNameOrder) {
  json d = inspect_file(fixture("nested.k2.h5"));
  EXPECT_EQ(d["keras_version"], "2.21.0");
  EXPECT_EQ(d["backend"], "tensorflow");
  EXPECT_EQ(d["model"]["name"], "nested");
  EXPECT_EQ(d["layers"][1]["hdf5_path"], "/model_weights/backbone");
  EXPECT_TRUE(d["layers"][3]["hdf5_path"].is_null());  // nested layers share their model's group
  EXPECT_EQ(field(d["weights"], "name"),
            (std::vector<std::string>{"backbone_conv/kernel:0", "backbone_conv/bias:0", "backbone_bn/gamma:0",
                                      "backbone_bn/beta:0", "backbone_dense/kernel:0", "backbone_dense/bias:0",
                                      "backbone_bn/moving_mean:0", "backbone_bn/moving_variance:0", "head/kernel:0",
                                      "head/bias:0"}));
  EXPECT_EQ(d["weights"][0]["layer"], "backbone");
  EXPECT_EQ(d["weights"][0]["path"], "/model_weights/backbone/backbone_conv/kernel:0");
  EXPECT_EQ(d["weights"][7]["index"], 7);
  const json& opt = d["optimizer"];
  EXPECT_EQ(opt["class_name"], "Custom>Adam");
  EXPECT_EQ(opt["name"], "Adam");
  ASSERT_EQ(opt["variables"].size(), 17u);
  EXPECT_EQ(line(opt["variables"][0]), "/optimizer_weights/iteration:0 () int64");
  EXPECT_EQ(opt["variables"][1]["name"], "Adam/m/backbone_conv/kernel:0");
  EXPECT_EQ(opt["variables"][2]["name"], "Adam/v/backbone_conv/kernel:0");
  EXPECT_EQ(d["compile_config"]["loss"], "sparse_categorical_crossentropy");
  EXPECT_TRUE(d["compile_config"].contains("optimizer_config"));
}

TEST(Inspect, Keras3H5) {
  json d = inspect_file(fixture("frozen.k3.h5"));
  EXPECT_EQ(d["keras_version"], "3.15.1");
  EXPECT_EQ(field(d["layers"], "trainable"),
            (std::vector<std::string>{"null", "false", "false", "true", "true", "true"}));
  EXPECT_EQ(d["weights"][0]["name"], "frozen_dense/kernel");
  EXPECT_EQ(d["optimizer"]["name"], "adam_1");
  EXPECT_EQ(d["optimizer"]["variables"].size(), 14u);
  EXPECT_EQ(d["optimizer"]["variables"][1]["name"], "adam_1/learning_rate");
  EXPECT_EQ(inspect_file(fixture("mlp.k3.h5"))["weights"][0]["name"], "mlp/dense/kernel");  // Sequential prefix
}

TEST(Inspect, Keras3WeightsTreeNamesLayersFromVarsAttributes) {
  json d = inspect_file(fixture("nested_seq.weights.h5"));
  EXPECT_TRUE(d["model"].is_null());
  EXPECT_TRUE(d["keras_version"].is_null());
  EXPECT_TRUE(d["compile_config"].is_null());
  EXPECT_EQ(field(d["layers"], "path"),
            (std::vector<std::string>{"pre", "post", "inner", "inner/inner_bn", "inner/inner_dense"}));
  EXPECT_EQ(field(d["layers"], "hdf5_path"),
            (std::vector<std::string>{"/layers/dense", "/layers/dense_1", "/layers/sequential",
                                      "/layers/sequential/layers/batch_normalization",
                                      "/layers/sequential/layers/dense"}));
  EXPECT_EQ(d["layers"][0]["class_name"], nullptr);
  EXPECT_EQ(d["optimizer"]["name"], "adam");
  EXPECT_TRUE(d["optimizer"]["class_name"].is_null());
  EXPECT_EQ(d["optimizer"]["variables"].size(), 18u);
}

TEST(Inspect, LegacyWeightsOnly) {
  json d = inspect_file(fixture("cnn.k2.weights_only.h5"));
  EXPECT_EQ(d["keras_version"], "2.21.0");
  EXPECT_TRUE(d["optimizer"].is_null());
  EXPECT_EQ(field(d["layers"], "name"),
            (std::vector<std::string>{"image", "conv", "bn", "relu", "dwconv", "act", "sepconv", "pool", "gap", "head"}));
  EXPECT_EQ(field(d["weights"], "path"),
            (std::vector<std::string>{
                "/conv/conv/kernel:0", "/conv/conv/bias:0", "/bn/bn/gamma:0", "/bn/bn/beta:0", "/bn/bn/moving_mean:0",
                "/bn/bn/moving_variance:0", "/dwconv/dwconv/depthwise_kernel:0", "/dwconv/dwconv/bias:0",
                "/sepconv/sepconv/depthwise_kernel:0", "/sepconv/sepconv/pointwise_kernel:0", "/sepconv/sepconv/bias:0",
                "/head/head/kernel:0", "/head/head/bias:0"}));
  EXPECT_EQ(line(d["weights"][9]), "/sepconv/sepconv/pointwise_kernel:0 (1,1,16,8) float32");
  EXPECT_EQ(d["weights"][9]["layer"], "sepconv");
}

TEST(Inspect, StoredDtypesAndDatasetsOutsideTheLayout) {
  // tf_keras's .weights.h5 variant: root vars without a name, a metrics group, no name attributes.
  TempDir tmp;
  auto file = keras::hdf5::File::create_in_memory("tf.weights.h5");
  auto root = file.root();
  root.write_dataset("layers/dense/vars/0", keras::Tensor::zeros({3, 2}, keras::DType::float64));
  root.write_dataset("layers/dense/vars/1", keras::Tensor::zeros({2}, keras::DType::int32));
  root.write_dataset("metrics/mean/vars/0", keras::Tensor::zeros({}, keras::DType::float32));
  root.write_dataset("vars/0", keras::Tensor::zeros({}, keras::DType::int64));
  root.write_dataset("stray", keras::Tensor::zeros({5}, keras::DType::float32));
  const std::string path = tmp.write("tf.weights.h5", file.image());
  json d = inspect_file(path);
  EXPECT_EQ(d["kind"], "weights.h5");
  EXPECT_EQ(all_lines(d), (std::vector<std::string>{"/layers/dense/vars/0 (3,2) float64", "/layers/dense/vars/1 (2,) int32",
                                                    "/metrics/mean/vars/0 () float32", "/stray (5,) float32",
                                                    "/vars/0 () int64"}));
  EXPECT_EQ(field(d["weights"], "layer"), (std::vector<std::string>{"null", "dense", "dense", "metrics/mean", "null"}));
  EXPECT_TRUE(d["optimizer"].is_null());
}

TEST(Inspect, ErrorsNameTheFile) {
  TempDir tmp;
  EXPECT_NE(error_of<keras::IOError>([&] { inspect_file(tmp.path("missing.keras")); }).find("missing.keras"),
            std::string::npos);
  EXPECT_NE(error_of<keras::IOError>([&] { inspect_file(fixture("FACTS.md")); }).find("not a Keras file"),
            std::string::npos);
  EXPECT_NE(error_of<keras::IOError>([&] { inspect_file(tmp.write("empty.h5", "")); }).find("empty"), std::string::npos);
  const std::string keras_bytes = keras::read_file_bytes(fixture("cnn.keras"));
  const std::string h5_bytes = keras::read_file_bytes(fixture("cnn.k2.h5"));
  for (size_t frac : {1, 10, 50, 90, 99}) {
    SCOPED_TRACE(frac);
    const std::string k = tmp.write("t.keras", keras_bytes.substr(0, keras_bytes.size() * frac / 100));
    EXPECT_NE(error_of<keras::IOError>([&] { inspect_file(k); }).find("t.keras"), std::string::npos);
  }
  // HDF5 cut short: refused with the file's name (the tail holds the heap of the config strings).
  const std::string h = tmp.write("t.h5", h5_bytes.substr(0, h5_bytes.size() / 2));
  EXPECT_NE(error_of<keras::IOError>([&] { inspect_file(h); }).find("t.h5"), std::string::npos);
  // HDF5 of no Keras layout.
  auto other = keras::hdf5::File::create_in_memory("other.h5");
  other.root().write_dataset("images", keras::Tensor::zeros({2, 2}));
  const std::string o = tmp.write("other.h5", other.image());
  EXPECT_NE(error_of<keras::IOError>([&] { inspect_file(o); }).find("[images]"), std::string::npos);
  // Zips that are not Keras models.
  const std::string nz = tmp.path("x.keras");
  keras::zip::write_archive(nz, {{"a.txt", "hello"}}, false);
  EXPECT_NE(error_of<keras::IOError>([&] { inspect_file(nz); }).find("config.json"), std::string::npos);
  keras::zip::write_archive(nz, {{"config.json", "{not json"}, {"model.weights.h5", h5_bytes}}, false);
  EXPECT_NE(error_of<keras::ValueError>([&] { inspect_file(nz); }).find("config.json"), std::string::npos);
}

TEST(Inspect, TextReportShowsEverySection) {
  json d = inspect_file(fixture("mlp.k2.h5"));
  const std::string text = keras::format_inspection(d);
  for (const char* needle : {"kind           h5", "keras_version  2.21.0", "Sequential 'mlp'", "Layers (4, from the config)",
                             "Weights (4 datasets)", "/model_weights/dense/dense/kernel:0", "(8, 16)", "float32",
                             "Optimizer: Custom>Adam 'Adam', 9 variables", "iteration:0", "Compile config (training_config)",
                             "loss: \"sparse_categorical_crossentropy\""})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  EXPECT_NE(keras::format_inspection(json::object()).find("Weights (0 datasets)"), std::string::npos);
  EXPECT_NE(keras::format_inspection(inspect_file(fixture("mlp.weights.h5"))).find("store no weight names"),
            std::string::npos);
}

// The app, when this build made it: build/apps/keras-inspect beside build/tests/<this test>.
TEST(Inspect, CommandLineTool) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path app = self.parent_path().parent_path() / "apps" / "keras-inspect";
  if (ec || !fs::exists(app)) GTEST_SKIP() << "keras-inspect is not built (" << app << ")";
  TempDir tmp;
  auto run = [&](const std::string& args) {
    const std::string cmd = "'" + app.string() + "' " + args + " >'" + tmp.path("out") + "' 2>'" + tmp.path("err") + "'";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  ASSERT_EQ(run("'" + fixture("nested.keras") + "' --json"), 0);
  json printed = json::parse(keras::read_file_bytes(tmp.path("out")));
  EXPECT_EQ(printed, inspect_file(fixture("nested.keras")));
  ASSERT_EQ(run("'" + fixture("cnn.k3.h5") + "'"), 0);
  EXPECT_EQ(keras::read_file_bytes(tmp.path("out")), keras::format_inspection(inspect_file(fixture("cnn.k3.h5"))));
  EXPECT_EQ(run("'" + fixture("FACTS.md") + "'"), 1);
  EXPECT_NE(keras::read_file_bytes(tmp.path("err")).find("not a Keras file"), std::string::npos);
  EXPECT_EQ(run("'" + tmp.path("missing.h5") + "'"), 1);
  EXPECT_EQ(run("--help"), 0);
  EXPECT_NE(keras::read_file_bytes(tmp.path("out")).find("usage: keras-inspect FILE [--json]"), std::string::npos);
  EXPECT_EQ(run(""), 2);
}
