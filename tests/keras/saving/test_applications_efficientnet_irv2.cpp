// keras.applications models that needed Normalization, Dropout's noise_shape and
// CustomScaleLayer: EfficientNetB0-B7, EfficientNetV2B0-B3/S/M/L and InceptionResNetV2, from the
// configs real Keras 3.15.1 and tf_keras 2.21 wrote (tests/data/keras/applications, README.md
// there). Each config loads, and the model has the layers, weights (path, shape, dtype,
// trainable) and parameter counts Keras's manifest records. The weighted fixture
// tiny_efficientnet loads from every file Keras wrote, predicts Keras's outputs within 1e-5,
// fine-tunes (noise-shape Dropout active, Normalization's statistics untouched) and is saved back with the weight layout Keras writes (Normalization's count as int64); an
// InceptionResNetV2 block (CustomScaleLayer) is saved and loaded back too.
// With KERAS_FIXTURES_EXPORT=<dir>, the files written here land in <dir> with their inputs and
// our outputs, for `python3 tests/data/keras/make_fixtures.py verify <dir>` (Keras 3 and tf_keras
// load them and must predict the same).
// Skipped while tests/data/keras/applications is absent (the fixtures are committed on main).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "keras/utils/file_util.h"

using namespace keras;

namespace {

const std::string kDir = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/applications";

#define SKIP_WITHOUT_FIXTURES() \
  if (!std::filesystem::is_directory(kDir)) GTEST_SKIP() << "no fixtures at " << kDir

// The text of a gzipped fixture (through gzip -dc: the library keeps zlib to itself).
std::string gunzip(const std::string& path) {
  if (!std::filesystem::exists(path)) throw std::runtime_error("missing fixture " + path);
  std::string text;
  FILE* pipe = popen(("gzip -dc '" + path + "'").c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run gzip for " + path);
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  if (pclose(pipe) != 0) throw std::runtime_error("gzip -dc failed on " + path);
  return text;
}

int64_t numel_of(const std::vector<Variable>& vs) {
  int64_t n = 0;
  for (const auto& v : vs) n += shape_numel(v.shape());
  return n;
}

// The model matches what Keras's manifest records for one generation.
void expect_manifest(const Model& model, const json& m, const std::string& gen) {
  SCOPED_TRACE(gen);
  std::vector<std::string> names;
  for (const auto& l : model.layers()) names.push_back(l->name());
  EXPECT_EQ(names, m["h5_layer_names"].get<std::vector<std::string>>());
  EXPECT_EQ(model.count_params(), m["params"]["total"].get<int64_t>());
  EXPECT_EQ(numel_of(model.trainable_weights()), m["params"]["trainable"].get<int64_t>());
  EXPECT_EQ(numel_of(model.non_trainable_weights()), m["params"]["non_trainable"].get<int64_t>());
  auto ws = model.weights();
  ASSERT_EQ(ws.size(), m["weights"].size());
  for (size_t i = 0; i < ws.size(); ++i) {
    const json& w = m["weights"][i];
    // Keras 3 records variable.path ("normalization/mean"); tf_keras the name ("normalization/mean:0"),
    // in which DepthwiseConv2D's kernel is still "depthwise_kernel" (Keras 3 renamed it "kernel").
    std::string want = gen == "k3" ? w["path"].get<std::string>() : w["name"].get<std::string>();
    if (gen == "k2") {
      if (auto at = want.find("/depthwise_kernel:0"); at != std::string::npos) want.replace(at, std::string("/depthwise_kernel:0").size(), "/kernel");
      else want.erase(want.size() - 2);  // ":0"
    }
    EXPECT_EQ(ws[i].path(), want) << i;
    EXPECT_EQ(ws[i].shape(), w["shape"].get<Shape>()) << want;
    EXPECT_EQ(dtype_name(ws[i].dtype()), w["dtype"].get<std::string>()) << want;
    EXPECT_EQ(ws[i].trainable(), w["trainable"].get<bool>()) << want;
  }
  Shape out = model.outputs()[0].shape;
  json want_out = m["output_shape"];
  EXPECT_EQ(config::shape_to_json(out), want_out);
}

class ApplicationConfig : public ::testing::TestWithParam<std::string> {};

TEST_P(ApplicationConfig, LoadsFromBothGenerationsAsKerasBuiltIt) {
  SKIP_WITHOUT_FIXTURES();
  const std::string name = GetParam();
  json manifest = json::parse(gunzip(kDir + "/" + name + ".manifest.json.gz"));
  for (const std::string gen : {"k3", "k2"}) {
    auto model = model_from_json(gunzip(kDir + "/" + name + "." + gen + ".json.gz"));
    expect_manifest(*model, manifest[gen], gen);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Applications, ApplicationConfig,
    ::testing::Values("EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3", "EfficientNetB4",
                      "EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "EfficientNetV2B0", "EfficientNetV2B1",
                      "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L",
                      "InceptionResNetV2"));

// ---- tiny_efficientnet: Keras's weights, outputs and file layout ----

std::string tiny(const std::string& suffix) { return kDir + "/tiny_efficientnet" + suffix; }

void expect_predicts_keras(Model& model, const std::string& label) {
  Tensor x = data::load_npy(tiny(".input0.npy"));
  std::vector<float> want = data::load_npy(tiny(".k3.output0.npy")).to_vector<float>();
  std::vector<float> got = model.predict(TensorList{x})[0].to_vector<float>();
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << label << " [" << i << "]";
}

// (path, shape, dtype) of every weight a file holds, in the file's order.
std::vector<std::string> weight_layout(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& w : inspect_file(path)["weights"]) out.push_back(w["path"].get<std::string>() + " " + w["shape"].dump() + " " + w["dtype"].get<std::string>());
  return out;
}

TEST(TinyEfficientNet, PredictsAsKerasFromEveryFile) {
  SKIP_WITHOUT_FIXTURES();
  for (const std::string file : {".keras", ".k3.h5"}) {
    auto model = load_model(tiny(file), {.compile = false});  // saved uncompiled
    expect_predicts_keras(*model, file);
  }
  auto model = model_from_json(read_file_bytes(tiny(".k3.json")));
  // The adapted Normalization is what the fixture randomised: a loader that skipped it would fail.
  auto norm = model->get_layer("normalization");
  ASSERT_EQ(norm->weights().size(), 3u);
  model->load_weights(tiny(".weights.h5"));
  EXPECT_NE(norm->weights()[0].value().to_vector<float>(), std::vector<float>(3, 0.0f));
  expect_predicts_keras(*model, ".weights.h5");
}

// A scratch folder, or KERAS_FIXTURES_EXPORT when set (kept for make_fixtures.py verify).
struct OutDir {
  OutDir() : keep(std::getenv("KERAS_FIXTURES_EXPORT") != nullptr) {
    path = keep ? std::filesystem::path(std::getenv("KERAS_FIXTURES_EXPORT"))
                : std::filesystem::temp_directory_path() / ("applications_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~OutDir() {
    if (!keep) std::filesystem::remove_all(path);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  bool keep;
  std::filesystem::path path;
};

TEST(TinyEfficientNet, SavesBackInKerasLayout) {
  SKIP_WITHOUT_FIXTURES();
  auto model = load_model(tiny(".keras"), {.compile = false});
  OutDir out;
  const std::string ours = out / "tiny_efficientnet";
  model->save(ours + ".keras");
  model->save(ours + ".h5");
  model->save_weights(ours + ".weights.h5");
  // Same datasets, shapes and dtypes as the files Keras wrote (count: int64 scalar at vars/2).
  EXPECT_EQ(weight_layout(ours + ".weights.h5"), weight_layout(tiny(".weights.h5")));
  EXPECT_EQ(weight_layout(ours + ".keras"), weight_layout(tiny(".keras")));
  EXPECT_EQ(weight_layout(ours + ".h5"), weight_layout(tiny(".k3.h5")));
  for (const std::string file : {".keras", ".h5"}) expect_predicts_keras(*load_model(ours + file, {.compile = false}), "ours" + file);
  Tensor x = data::load_npy(tiny(".input0.npy"));
  data::save_npy(ours + ".input0.npy", x);
  data::save_npy(ours + ".output0.npy", model->predict(x));
}

TEST(TinyEfficientNet, FineTunesWithItsStatisticsFixed) {
  SKIP_WITHOUT_FIXTURES();
  auto model = load_model(tiny(".keras"), {.compile = false});
  Tensor x = data::load_npy(tiny(".input0.npy"));
  Tensor y = Tensor::from_vector(std::vector<int64_t>{3, 7});
  TensorList norm_before = model->get_layer("normalization")->get_weights();
  auto kernel = model->get_layer("stem_conv")->weights()[0];
  std::vector<float> kernel_before = kernel.value().to_vector<float>();
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}), .loss = "sparse_categorical_crossentropy"});
  auto history = model->fit(x, y, {.batch_size = 2, .epochs = 2, .verbose = 0});  // noise-shape dropout active
  for (double loss : history["loss"]) EXPECT_TRUE(std::isfinite(loss));
  TensorList norm_after = model->get_layer("normalization")->get_weights();
  for (size_t i = 0; i < norm_before.size(); ++i)
    EXPECT_EQ(norm_after[i].to_vector<double>(), norm_before[i].to_vector<double>()) << "Normalization weight " << i;
  EXPECT_NE(kernel.value().to_vector<float>(), kernel_before);
}

TEST(InceptionResNetV2Block, SavesAndLoadsBack) {
  // block35 of InceptionResNetV2 in small: x + 0.17 * conv(x), then relu.
  namespace L = keras::layers;
  auto in = L::Input({6, 6, 4});
  auto up = L::Conv2D({.filters = 4, .kernel_size = 1, .name = "block35_1_conv"})(in);
  auto x = L::CustomScaleLayer({.scale = 0.17, .name = "custom_scale_layer"})({in, up});
  x = L::Activation({.activation = "relu", .name = "block35_1_ac"})(x);
  x = L::GlobalAveragePooling2D({.name = "avg_pool"})(x);
  Model model(in, L::Dense({.units = 3, .activation = "softmax", .name = "predictions"})(x), "irv2_block");
  Tensor input = random::normal({2, 6, 6, 4}, 0, 1, uint64_t{3});
  Tensor want = model.predict(input);
  OutDir out;
  const std::string ours = out / "irv2_block";
  for (const std::string file : {".keras", ".h5"}) {
    model.save(ours + file);
    EXPECT_EQ(load_model(ours + file)->predict(input).to_vector<float>(), want.to_vector<float>()) << file;
  }
  data::save_npy(ours + ".input0.npy", input);
  data::save_npy(ours + ".output0.npy", want);
}

}  // namespace
