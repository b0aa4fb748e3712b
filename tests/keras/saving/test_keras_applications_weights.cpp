// The small weighted members of every keras.applications family (tests/data/keras/applications/
// tiny_*), saved uncompiled by real Keras 3.15 and tf_keras 2.21 as a user saves a backbone:
// every file kind loads and predicts like Keras (1e-5 relative), fit trains a new head on the
// frozen base, and the files we write back load and predict alike. With
// KERAS_FIXTURES_EXPORT=<dir>, our files are also written there for
// `make_fixtures.py verify <dir>` (Keras loading them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "tests/support/applications_fixtures.h"

namespace fs = std::filesystem;
using namespace keras;
using namespace keras::testing::applications;
namespace L = keras::layers;

namespace {

// |ours - keras| <= 1e-5 + 1e-5 |keras| everywhere (make_fixtures.py's tolerance).
void expect_close(const Tensor& ours, const Tensor& keras, const std::string& what) {
  ASSERT_EQ(ours.shape(), keras.shape()) << what;
  const Tensor a = ours.contiguous(), b = keras.contiguous();
  int bad = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (!(std::abs(x - y) <= 1e-5 + 1e-5 * std::abs(y)) && bad++ < 3)
      ADD_FAILURE() << what << ": element " << i << " is " << x << ", Keras " << y;
  }
}

class TinyBackbone : public ::testing::TestWithParam<std::string> {
 protected:
  std::string stem() const { return GetParam(); }
  Tensor input() const { return data::load_npy(kDir + stem() + ".input0.npy"); }
  Tensor expected(const std::string& gen) const { return data::load_npy(kDir + stem() + "." + gen + ".output0.npy"); }
  bool has(const std::string& suffix) const { return fs::exists(kDir + stem() + suffix); }
};

TEST_P(TinyBackbone, EveryFileKerasWroteLoadsAndPredictsLikeKeras) {
  const Tensor x = input();
  ASSERT_TRUE(has(".keras"));
  for (const auto& [suffix, gen] : std::vector<std::pair<std::string, std::string>>{
           {".keras", "k3"}, {".k3.h5", "k3"}, {".k2.h5", "k2"}}) {
    if (suffix == ".k2.h5" && !has(suffix)) continue;  // tf_keras lacks the architecture (README)
    SCOPED_TRACE(stem() + suffix);
    auto model = load_model(kDir + stem() + suffix);
    EXPECT_FALSE(model->compiled());  // saved before compile: loads uncompiled, as in Keras
    expect_close(model->predict(x), expected(gen), suffix);
  }
  // Weights-only files into the architecture rebuilt from the JSON config.
  for (const auto& [suffix, gen] : std::vector<std::pair<std::string, std::string>>{
           {".weights.h5", "k3"}, {".k2.weights_only.h5", "k2"}}) {
    if (!has(suffix)) continue;
    SCOPED_TRACE(stem() + suffix);
    auto model = model_from_json(read_text(find(stem(), "." + gen + ".json")));
    model->load_weights(kDir + stem() + suffix, {.strict = true});
    expect_close(model->predict(x), expected(gen), suffix);
  }
}

TEST_P(TinyBackbone, OurFilesLoadBackAndPredictTheSame) {
  const Tensor x = input();
  auto model = load_model(kDir + stem() + ".keras");
  const fs::path dir = fs::temp_directory_path() / ("keras_apps_" + stem() + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const char* out = std::getenv("KERAS_FIXTURES_EXPORT");
  for (const std::string suffix : {".keras", ".h5"}) {
    const std::string path = (dir / (stem() + suffix)).string();
    model->save(path);
    expect_close(load_model(path)->predict(x), expected("k3"), "ours" + suffix);
    if (out) fs::copy_file(path, fs::path(out) / (stem() + suffix), fs::copy_options::overwrite_existing);
  }
  const std::string weights = (dir / (stem() + ".weights.h5")).string();
  model->save_weights(weights);
  auto fresh = model_from_json(model->to_json());
  fresh->load_weights(weights, {.strict = true});
  expect_close(fresh->predict(x), expected("k3"), "ours.weights.h5");
  if (out) {
    fs::copy_file(weights, fs::path(out) / (stem() + ".weights.h5"), fs::copy_options::overwrite_existing);
    fs::copy_file(kDir + stem() + ".input0.npy", fs::path(out) / (stem() + ".input0.npy"), fs::copy_options::overwrite_existing);
    data::save_npy((fs::path(out) / (stem() + ".output0.npy")).string(), model->predict(x));
  }
  fs::remove_all(dir);
}

// Transfer learning as Keras's guide does it: the loaded backbone frozen (BatchNormalization in
// inference mode), a new head trained on its outputs.
TEST_P(TinyBackbone, FitTrainsANewHeadOnTheFrozenBackbone) {
  auto base = load_model(kDir + stem() + ".keras");
  base->set_trainable(false);
  const auto before = base->get_weights();
  const Tensor x = input();
  const Shape in_shape(x.shape().begin() + 1, x.shape().end());
  auto inputs = L::Input(in_shape);
  auto features = (*base)(inputs, {.training = false});
  auto outputs = L::Dense({.units = 2, .activation = "softmax", .name = "new_head"})(features);
  Model model(inputs, outputs);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}), .loss = "sparse_categorical_crossentropy"});
  // Labels the head can learn: which of the backbone's first two outputs is larger.
  const Tensor f = base->predict(x);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < f.shape()[0]; ++i)
    labels.push_back(f.contiguous().data<float>()[i * f.shape()[1]] > f.contiguous().data<float>()[i * f.shape()[1] + 1]);
  const Tensor y = Tensor::from_vector(labels);
  auto history = model.fit(x, y, {.batch_size = 2, .epochs = 8, .verbose = 0});
  const auto& loss = history["loss"];
  EXPECT_LT(loss.back(), loss.front());
  const auto after = base->get_weights();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {  // bytes, whatever the dtype (Normalization's count is int64)
    ASSERT_EQ(after[i].dtype(), before[i].dtype()) << "weight " << i;
    EXPECT_EQ(std::memcmp(after[i].contiguous().raw_data(), before[i].contiguous().raw_data(), after[i].nbytes()), 0)
        << "weight " << i;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Zoo, TinyBackbone, ::testing::ValuesIn(stems_with(".input0.npy")), test_name);

}  // namespace
