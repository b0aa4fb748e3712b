// Whole-model saving and loading (keras/saving/saving.h): every fixture written by real Keras 3 and
// tf_keras loads and predicts like Keras; our own .keras / .h5 files round-trip a compiled model
// with its optimizer state; training resumed from a file ends bit-identical to an unbroken run;
// bad files give typed errors naming the file and entry, and never replace a good file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "keras/saving/compile_config.h"
#include "keras/utils/zip.h"
#include "keras/utils/file_util.h"
#include "keras/keras.h"
#include "keras/data/readers.h"
#include "keras/saving/saving.h"
#include "layers/elementwise_merge.h"
#include "optimizers/optimizer.h"

namespace L = keras::layers;
namespace fs = std::filesystem;
using keras::Model;
using keras::Tensor;
using keras::TensorList;

namespace {

const std::string kFixtures = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/";

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("keras_saving_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// Largest |a - b| / (1 + |b|) over all elements (shapes must match).
double max_rel_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  auto x = a.to_vector<float>(), y = b.to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    worst = std::max(worst, std::abs(double(x[i]) - double(y[i])) / (1.0 + std::abs(double(y[i]))));
  return worst;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

void expect_same_weights(const Model& a, const Model& b) {
  auto wa = a.weights(), wb = b.weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i)
    EXPECT_TRUE(bit_equal(wa[i].value(), wb[i].value())) << wa[i].path() << " vs " << wb[i].path();
}

void expect_same_optimizer_state(const Model& a, const Model& b) {
  ASSERT_TRUE(a.optimizer() && b.optimizer());
  auto va = a.optimizer()->variables(), vb = b.optimizer()->variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_TRUE(bit_equal(va[i].value(), vb[i].value())) << va[i].path();
}

int count_files(const std::string& prefix) {
  int n = 0;
  while (fs::exists(prefix + std::to_string(n) + ".npy")) ++n;
  return n;
}

// ---- fixtures written by real Keras ----

struct FixtureCase {
  std::string model;
  std::string file_suffix;    // ".keras", ".k3.h5", ".k2.h5"
  std::string output_prefix;  // ".k3.output", ".k2.output"
};
// gtest prints a parameter into the test listing; without this, as raw bytes (heap addresses).
void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.model << c.file_suffix; }

class KerasFixtures : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(KerasFixtures, LoadModelPredictsLikeKeras) {
  const auto& c = GetParam();
  auto model = keras::load_model(kFixtures + c.model + c.file_suffix);
  TensorList inputs;
  for (int i = 0, n = count_files(kFixtures + c.model + ".input"); i < n; ++i)
    inputs.push_back(keras::data::load_npy(kFixtures + c.model + ".input" + std::to_string(i) + ".npy"));
  TensorList outputs = model->predict(inputs);
  const std::string prefix = kFixtures + c.model + c.output_prefix;
  ASSERT_EQ(static_cast<int>(outputs.size()), count_files(prefix));
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_LE(max_rel_diff(outputs[i], keras::data::load_npy(prefix + std::to_string(i) + ".npy")), 1e-5) << "output " << i;
  // KERAS_VERIFY_EXPORT=DIR: re-save with our writers, for `make_fixtures.py verify DIR`.
  if (const char* dir = std::getenv("KERAS_VERIFY_EXPORT")) {
    std::string stem = std::string(dir) + "/" + c.model + "_from" + c.file_suffix;
    std::replace(stem.begin() + static_cast<long>(std::strlen(dir)) + 1, stem.end(), '.', '_');
    for (const std::string ext : {".keras", ".h5"}) {
      model->save(stem + ext);
      for (size_t i = 0; i < inputs.size(); ++i) keras::data::save_npy(stem + ".input" + std::to_string(i) + ".npy", inputs[i]);
      for (size_t i = 0; i < outputs.size(); ++i) keras::data::save_npy(stem + ".output" + std::to_string(i) + ".npy", outputs[i]);
    }
  }
  // Every fixture was compiled with Adam and trained: the optimizer state comes back too.
  ASSERT_TRUE(model->compiled());
  EXPECT_EQ(model->optimizer()->class_name(), "Adam");
  EXPECT_GT(model->optimizer()->iterations(), 0);
  EXPECT_NEAR(model->optimizer()->learning_rate(), 0.01, 1e-7);
}

std::vector<FixtureCase> fixture_cases() {
  std::vector<FixtureCase> cases;
  for (const char* m : {"mlp", "cnn", "two_inputs", "nested", "nested_seq", "nested_shared", "frozen", "nested_frozen"}) {
    cases.push_back({m, ".keras", ".k3.output"});
    cases.push_back({m, ".k3.h5", ".k3.output"});
    cases.push_back({m, ".k2.h5", ".k2.output"});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KerasFixtures, ::testing::ValuesIn(fixture_cases()), [](const auto& info) {
  std::string s = info.param.model + info.param.file_suffix;
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
});

TEST(KerasFixtures, FrozenLayersStayFrozenAndCompileConfigIsRead) {
  auto model = keras::load_model(kFixtures + "frozen.keras");
  EXPECT_FALSE(model->get_layer("frozen_dense")->trainable());
  EXPECT_FALSE(model->get_layer("frozen_bn")->trainable());
  const auto& o = model->compile_options();
  EXPECT_EQ(o.loss.name, "sparse_categorical_crossentropy");
  ASSERT_EQ(o.metrics.size(), 1u);
  EXPECT_EQ(o.metrics[0].name, "accuracy");
  // Keras 2's MeanMetricWrapper object compiles back to the same "accuracy".
  auto k2 = keras::load_model(kFixtures + "frozen.k2.h5");
  ASSERT_EQ(k2->compile_options().metrics.size(), 1u);
  EXPECT_EQ(k2->compile_options().metrics[0].name, "accuracy");
}

TEST(KerasFixtures, LoadWithoutCompile) {
  auto model = keras::load_model(kFixtures + "cnn.keras", {.compile = false});
  EXPECT_FALSE(model->compiled());
}

// ---- our own files ----

// Two inputs, a shared Dense, BatchNormalization, two outputs: compiled and trained briefly.
std::shared_ptr<Model> trained_model() {
  keras::set_random_seed(11);
  auto a = L::Input({6}, {.name = "a"});
  auto b = L::Input({6}, {.name = "b"});
  auto shared = L::Dense({.units = 5, .activation = "tanh", .name = "shared"});
  auto h = L::Concatenate()({shared(a), shared(b)});
  h = L::BatchNormalization({.name = "bn"})(h);
  auto out1 = L::Dense({.units = 3, .activation = "softmax", .name = "cls"})(h);
  auto out2 = L::Dense({.units = 1, .name = "reg"})(h);
  auto model = std::make_shared<Model>(std::vector<keras::KerasTensor>{a, b}, std::vector<keras::KerasTensor>{out1, out2}, "two_heads");
  model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 3e-3}),
                  .losses = {"sparse_categorical_crossentropy", "mse"},
                  .loss_weights = {1.0, 0.5},
                  .output_metrics = {{"accuracy"}, {"mae"}}});
  Tensor xa = keras::random::normal({64, 6}, 0, 1, uint64_t{1}), xb = keras::random::normal({64, 6}, 0, 1, uint64_t{2});
  Tensor y1 = keras::ops::cast(keras::random::uniform({64}, 0, 3, uint64_t{3}), keras::DType::int64);
  Tensor y2 = keras::random::normal({64, 1}, 0, 1, uint64_t{4});
  model->fit({xa, xb}, {y1, y2}, {.batch_size = 16, .epochs = 2, .verbose = 0});
  return model;
}

class OwnFiles : public ::testing::TestWithParam<std::string> {};

TEST_P(OwnFiles, CompiledModelRoundTripsBitForBit) {
  auto model = trained_model();
  const std::string path = (temp_dir() / ("two_heads" + GetParam())).string();
  model->save(path);
  auto loaded = keras::load_model(path);
  EXPECT_EQ(loaded->name(), "two_heads");
  expect_same_weights(*model, *loaded);
  expect_same_optimizer_state(*model, *loaded);
  EXPECT_EQ(loaded->optimizer()->iterations(), model->optimizer()->iterations());
  const auto& o = loaded->compile_options();
  ASSERT_EQ(o.losses.size(), 2u);
  EXPECT_EQ(o.losses[0].name, "sparse_categorical_crossentropy");
  EXPECT_EQ(o.losses[1].name, "mean_squared_error");
  EXPECT_EQ(o.loss_weights, (std::vector<double>{1.0, 0.5}));
  ASSERT_EQ(o.output_metrics.size(), 2u);
  EXPECT_EQ(o.output_metrics[1][0].name, "mae");
  Tensor xa = keras::random::normal({5, 6}, 0, 1, uint64_t{9}), xb = keras::random::normal({5, 6}, 0, 1, uint64_t{10});
  auto p = model->predict({xa, xb}), q = loaded->predict({xa, xb});
  for (size_t i = 0; i < p.size(); ++i) EXPECT_TRUE(bit_equal(p[i], q[i]));
}

// Training resumed from a saved file ends where an unbroken run ends, bit for bit.
TEST_P(OwnFiles, ResumedTrainingIsBitIdentical) {
  auto build = [] {
    keras::set_random_seed(5);
    auto model = std::make_shared<keras::Sequential>(
        std::vector<keras::LayerPtr>{L::InputLayer({.shape = {10}}), L::Dense({.units = 16, .activation = "relu"}),
                                     L::BatchNormalization(), L::Dense({.units = 4, .activation = "softmax"})},
        "resume");
    model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 1e-2}), .loss = "sparse_categorical_crossentropy",
                    .metrics = {"accuracy"}});
    return model;
  };
  Tensor x = keras::random::normal({96, 10}, 0, 1, uint64_t{7});
  Tensor y = keras::ops::cast(keras::random::uniform({96}, 0, 4, uint64_t{8}), keras::DType::int64);
  auto unbroken = build();
  keras::set_random_seed(99);
  unbroken->fit(x, y, {.batch_size = 16, .epochs = 4, .verbose = 0});

  auto first = build();
  keras::set_random_seed(99);
  first->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0});
  const std::string path = (temp_dir() / ("resume" + GetParam())).string();
  first->save(path);
  auto resumed = keras::load_model(path);
  keras::set_random_seed(99);
  resumed->fit(x, y, {.batch_size = 16, .epochs = 4, .verbose = 0, .initial_epoch = 2});
  expect_same_weights(*unbroken, *resumed);
  expect_same_optimizer_state(*unbroken, *resumed);
}

INSTANTIATE_TEST_SUITE_P(Formats, OwnFiles, ::testing::Values(".keras", ".h5"),
                         [](const auto& info) { return info.param == ".keras" ? std::string("keras") : std::string("h5"); });

TEST(OwnFiles, KerasArchiveLayout) {
  auto model = trained_model();
  const std::string path = (temp_dir() / "layout.keras").string();
  keras::save_model(*model, path);
  auto entries = keras::zip::read_archive(path);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "metadata.json");
  EXPECT_EQ(entries[1].name, "config.json");
  EXPECT_EQ(entries[2].name, "model.weights.h5");
  auto config = nlohmann::json::parse(entries[1].data);
  EXPECT_EQ(config["class_name"], "Functional");
  EXPECT_EQ(config["compile_config"]["optimizer"]["class_name"], "Adam");
  EXPECT_EQ(nlohmann::json::parse(entries[0].data)["keras_version"], "3.15.1");
  // Without the optimizer: no compile config, and the model loads uncompiled.
  keras::save_model(*model, path, {.include_optimizer = false});
  EXPECT_FALSE(keras::load_model(path)->compiled());
}

TEST(OwnFiles, WeightsFilesLoadIntoAFreshModelOfTheSameArchitecture) {
  auto model = trained_model();
  for (const std::string name : {"w.weights.h5", "w.h5", "full.keras"}) {
    const std::string path = (temp_dir() / name).string();
    if (name == "full.keras") model->save(path);
    else model->save_weights(path);
    auto fresh = keras::model_from_json(model->to_json());
    auto report = fresh->load_weights(path);
    EXPECT_TRUE(report.missing.empty()) << name << ": " << report.str();
    expect_same_weights(*model, *fresh);
    // Strict too: the optimizer state the files hold is not a leftover for an uncompiled model.
    auto strict = keras::model_from_json(model->to_json());
    keras::LoadWeightsOptions options;
    options.strict = true;
    EXPECT_NO_THROW(strict->load_weights(path, options)) << name;
    expect_same_weights(*model, *strict);
  }
}

// ---- bad input ----

template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}

std::string rewrite_archive(const std::string& source, const std::function<void(std::vector<keras::zip::Entry>&)>& edit,
                            const std::string& name) {
  auto entries = keras::zip::read_archive(source);
  edit(entries);
  const std::string path = (temp_dir() / name).string();
  keras::write_file_atomic(path, keras::zip::archive_bytes(entries, false, path));
  return path;
}

TEST(BadFiles, TypedErrorsNameTheFileAndEntry) {
  const std::string good = kFixtures + "mlp.keras";
  auto missing = message_of<keras::IOError>([&] { keras::load_model((temp_dir() / "nope.keras").string()); });
  EXPECT_NE(missing.find("nope.keras"), std::string::npos) << missing;

  std::string bytes = keras::read_file_bytes(good);
  const std::string truncated = (temp_dir() / "truncated.keras").string();
  keras::write_file_atomic(truncated, bytes.substr(0, bytes.size() / 2));
  auto t = message_of<keras::IOError>([&] { keras::load_model(truncated); });
  EXPECT_NE(t.find("truncated.keras"), std::string::npos) << t;

  auto no_config = rewrite_archive(good, [](auto& es) { es.erase(es.begin() + 1); }, "no_config.keras");
  auto nc = message_of<keras::IOError>([&] { keras::load_model(no_config); });
  EXPECT_NE(nc.find("config.json"), std::string::npos) << nc;

  auto unknown = rewrite_archive(good, [](auto& es) {
    auto c = nlohmann::json::parse(es[1].data);
    c["config"]["layers"][1]["class_name"] = "Dense3D";
    es[1].data = c.dump();
  }, "unknown.keras");
  auto u = message_of<keras::TypeError>([&] { keras::load_model(unknown); });
  EXPECT_NE(u.find("Dense3D"), std::string::npos) << u;
  EXPECT_NE(u.find("Conv2D"), std::string::npos) << u;  // lists what is registered
  EXPECT_NE(u.find("config.json"), std::string::npos) << u;

  auto bad_json = rewrite_archive(good, [](auto& es) { es[1].data = "{\"class_name\": "; }, "bad_json.keras");
  message_of<keras::ValueError>([&] { keras::load_model(bad_json); });

  auto wrong_shape = rewrite_archive(good, [](auto& es) {
    auto c = nlohmann::json::parse(es[1].data);
    c["config"]["layers"][1]["config"]["units"] = 17;  // the saved kernel is (8, 16)
    es[1].data = c.dump();
  }, "wrong_shape.keras");
  auto ws = message_of<keras::IOError>([&] { keras::load_model(wrong_shape); });
  EXPECT_NE(ws.find("model.weights.h5"), std::string::npos) << ws;

  auto escape = rewrite_archive(good, [](auto& es) { es.push_back({"../../evil.txt", "x"}); }, "escape.keras");
  auto e = message_of<keras::IOError>([&] { keras::load_model(escape); });
  EXPECT_NE(e.find("../../evil.txt"), std::string::npos) << e;

  message_of<keras::ValueError>([&] { keras::load_model("model.pt"); });
  auto weights_only = message_of<keras::IOError>([&] { keras::load_model(kFixtures + "mlp.k2.weights_only.h5"); });
  EXPECT_NE(weights_only.find("load_weights"), std::string::npos) << weights_only;
}

TEST(BadFiles, FailedLoadWeightsLeavesTheModelUnchanged) {
  auto model = trained_model();
  const auto before = model->get_weights();
  auto other = std::make_shared<keras::Sequential>(
      std::vector<keras::LayerPtr>{L::InputLayer({.shape = {8}}), L::Dense({.units = 16}), L::Dense({.units = 4})});
  const std::string path = (temp_dir() / "other.weights.h5").string();
  other->save_weights(path);
  EXPECT_THROW(model->load_weights(path), keras::Error);
  const auto after = model->get_weights();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(bit_equal(before[i], after[i]));
}

TEST(BadFiles, AFailedSaveNeverReplacesAGoodFile) {
  auto model = trained_model();
  const std::string path = (temp_dir() / "keep.keras").string();
  model->save(path);
  const std::string good = keras::read_file_bytes(path);
  // An OpLayer (x * 2 on a KerasTensor) cannot be serialized: the save fails before writing.
  auto x = L::Input({6});
  auto y = L::Dense({.units = 2})(x * 2.0);
  Model unsavable(x, y);
  EXPECT_THROW(unsavable.save(path), keras::NotImplementedError);
  EXPECT_EQ(keras::read_file_bytes(path), good);
  // A directory that does not exist: IOError, nothing written.
  EXPECT_THROW(model->save((temp_dir() / "no_such_dir" / "m.keras").string()), keras::IOError);
}

}  // namespace

// ---- custom objects in the compile config ----

namespace custom {

// A registered custom loss with an option: factor * mean squared error.
class ScaledMseImpl : public keras::losses::Loss {
 public:
  explicit ScaledMseImpl(double factor) : Loss("scaled_mse", "sum_over_batch_size"), factor_(factor) {}
  std::string class_name() const override { return "ScaledMse"; }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override {
    auto d = keras::ops::subtract(y_pred, y_true);
    return keras::ops::multiply(keras::ops::mean(keras::ops::multiply(d, d), {-1}), factor_);
  }
  keras::json get_config() const override {
    auto c = Loss::get_config();
    c["factor"] = factor_;
    return c;
  }
  double factor() const { return factor_; }

 private:
  double factor_;
};

// A registered custom metric: the largest |y_pred| seen.
class MaxAbsImpl : public keras::metrics::Metric {
 public:
  MaxAbsImpl() : Metric("max_abs") {}
  std::string class_name() const override { return "MaxAbs"; }
  void update_state(const Tensor&, const Tensor& y_pred, const Tensor&) override {
    for (float v : y_pred.to_vector<float>()) best_ = std::max(best_, double(std::abs(v)));
  }
  double result() const override { return best_; }
  void reset_state() override { best_ = 0; }

 private:
  double best_ = 0;
};

const bool registered = [] {
  keras::losses::register_loss("ScaledMse", [](const keras::json& c) {
    return std::make_shared<ScaledMseImpl>(c.value("factor", 1.0));
  });
  keras::metrics::register_metric("MaxAbs", [](const keras::json&) { return std::make_shared<MaxAbsImpl>(); });
  return true;
}();

}  // namespace custom

TEST(CustomObjects, RegisteredLossAndMetricRoundTripThroughTheCompileConfig) {
  auto x = L::Input({3});
  auto model = std::make_shared<Model>(x, L::Dense({.units = 2})(x), "custom_objects");
  model->compile({.optimizer = "sgd", .loss = std::make_shared<custom::ScaledMseImpl>(2.5),
                  .metrics = {std::make_shared<custom::MaxAbsImpl>(), "mae"}});
  model->fit(keras::random::normal({8, 3}, 0, 1, uint64_t{1}), keras::random::normal({8, 2}, 0, 1, uint64_t{2}),
             {.batch_size = 4, .epochs = 1, .verbose = 0});
  for (const std::string ext : {".keras", ".h5"}) {
    const std::string path = (temp_dir() / ("custom" + ext)).string();
    model->save(path);
    auto loaded = keras::load_model(path);
    const auto& o = loaded->compile_options();
    auto loss = std::dynamic_pointer_cast<custom::ScaledMseImpl>(o.loss.object);
    ASSERT_TRUE(loss) << ext;
    EXPECT_EQ(loss->factor(), 2.5);
    ASSERT_EQ(o.metrics.size(), 2u);
    EXPECT_TRUE(std::dynamic_pointer_cast<custom::MaxAbsImpl>(o.metrics[0].object)) << ext;
    EXPECT_EQ(o.metrics[1].name, "mae");
    EXPECT_EQ(loaded->optimizer()->class_name(), "SGD");
  }
  // An unregistered class in a saved compile config names itself and lists what is known.
  auto cc = keras::saving::compile_config(*model);
  cc["loss"]["class_name"] = "NoSuchLoss";
  try {
    keras::saving::compile_options_from_config(cc, *model, "compile_config");
    FAIL() << "expected an error";
  } catch (const keras::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("NoSuchLoss"), std::string::npos) << m;
    EXPECT_NE(m.find("ScaledMse"), std::string::npos) << m;
  }
}
