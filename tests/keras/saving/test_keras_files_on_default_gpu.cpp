// Files written by real Keras, loaded where the process default device is the GPU (as a Keras user
// with one loads them): every variable lands on cuda:0, predict gives Keras's outputs from host
// inputs, a frozen backbone fine-tunes there as on the CPU, and what is saved from the GPU loads on
// the CPU. Without a GPU, SimulatedCuda stands behind cuda:0 (CPU arithmetic: a tensor created on
// the wrong device is still a DeviceError).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "keras/data/readers.h"
#include "keras/keras.h"
#include "tests/support/applications_fixtures.h"
#include "tests/support/default_device.h"
#include "tests/support/simulated_device.h"
#include "tests/support/tensor_compare.h"

namespace fs = std::filesystem;
namespace L = keras::layers;
using namespace keras;

namespace {

const std::string kRoot = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/";

using test_support::DefaultDeviceScope;

struct FileCase {
  std::string dir, stem;
};
void PrintTo(const FileCase& c, std::ostream* os) { *os << c.stem; }

// Host tensors, as a loader gives them, whatever the default device.
TensorList npy_files(const std::string& prefix) {
  DeviceScope host(Device::cpu());
  TensorList out;
  for (int i = 0; fs::exists(prefix + std::to_string(i) + ".npy"); ++i)
    out.push_back(data::load_npy(prefix + std::to_string(i) + ".npy"));
  return out;
}

// make_fixtures.py's tolerance, |ours - keras| <= 1e-5 + 1e-5 |keras|; 1e-4 on a real GPU, whose
// summation orders differ from the CPU's.
void expect_close(const Tensor& ours, const Tensor& keras, double tol, const std::string& what) {
  ASSERT_EQ(ours.shape(), keras.shape()) << what;
  EXPECT_EQ(ours.device(), Device::cpu()) << what << ": predict gives host tensors";
  const std::vector<double> a = ours.to_vector<double>(), b = keras.to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol + tol * std::abs(b[i])) && bad++ < 3)
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", Keras " << b[i];
}

class KerasFileOnDefaultGpu : public ::testing::TestWithParam<FileCase> {
 protected:
  std::string path(const std::string& suffix) const { return GetParam().dir + GetParam().stem + suffix; }
};

TEST_P(KerasFileOnDefaultGpu, LoadsOnTheGpuAndPredictsLikeKeras) {
  test_support::SimulatedCuda sim;
  const double tol = sim.active() ? 1e-5 : 1e-4;
  const TensorList inputs = npy_files(path(".input"));
  ASSERT_FALSE(inputs.empty());
  DefaultDeviceScope gpu(Device::cuda(0));
  for (const auto& [suffix, gen] : std::vector<std::pair<std::string, std::string>>{
           {".keras", "k3"}, {".k3.h5", "k3"}, {".k2.h5", "k2"}}) {
    if (!fs::exists(path(suffix))) continue;  // tf_keras lacks some architectures
    SCOPED_TRACE(GetParam().stem + suffix);
    auto model = load_model(path(suffix));
    for (const Variable& v : model->weights()) EXPECT_EQ(v.value().device(), Device::cuda(0)) << v.path();
    const TensorList outputs = model->predict(inputs);
    const TensorList expected = npy_files(path("." + gen + ".output"));
    ASSERT_EQ(outputs.size(), expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) expect_close(outputs[i], expected[i], tol, "output " + std::to_string(i));
  }
}

struct FineTuned {
  Device device;  // where the model ran
  std::vector<double> losses;
  TensorList weights, predictions;
};

// Keras's transfer-learning recipe on the loaded model: frozen, a new head trained on it, then the
// whole model saved and loaded back with the CPU as the default device.
FineTuned fine_tune(const std::string& file, const Tensor& x) {
  utils::set_random_seed(5);
  auto base = load_model(file);
  base->set_trainable(false);
  const Shape in_shape(x.shape().begin() + 1, x.shape().end());
  auto inputs = L::Input(in_shape);
  auto features = L::Flatten()((*base)(inputs, {.training = false}));
  auto outputs = L::Dense({.units = 2, .activation = "softmax", .name = "new_head"})(features);
  Model model(inputs, outputs);
  // SGD: Adam's per-component normalisation would turn summation-order noise in near-zero
  // gradients into steps of the learning rate, and the GPU's sums are ordered otherwise.
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "sparse_categorical_crossentropy"});
  std::vector<int32_t> labels(static_cast<size_t>(x.dim(0)));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 2);
  const Tensor y = Tensor::from_vector(labels, {x.dim(0)}, Device::cpu());
  FineTuned r{model.device()};
  r.losses = model.fit(x, y, {.batch_size = 2, .epochs = 3, .verbose = 0})["loss"];
  r.weights = model.get_weights();
  const fs::path saved = fs::temp_directory_path() / ("default_gpu_" + std::to_string(::getpid()) + ".keras");
  model.save(saved.string());
  {
    DefaultDeviceScope host(Device::cpu());
    r.predictions.push_back(load_model(saved.string())->predict(x));
  }
  fs::remove(saved);
  r.predictions.push_back(model.predict(x));
  return r;
}

TEST_P(KerasFileOnDefaultGpu, FineTunesOnTheGpuAsOnTheCpu) {
  test_support::SimulatedCuda sim;
  // Not bit for bit even when simulated: on the CPU, training fuses BatchNormalization with its
  // ReLU and inference folds it into the convolution; off the CPU both run apart.
  const double tol = sim.active() ? 1e-5 : 1e-4;
  const TensorList inputs = npy_files(path(".input"));
  if (inputs.size() != 1) GTEST_SKIP() << "a single-input model is fine-tuned here";
  FineTuned cpu{Device::cpu()}, gpu{Device::cpu()};
  {
    DefaultDeviceScope d(Device::cpu());
    cpu = fine_tune(path(".keras"), inputs[0]);
  }
  {
    DefaultDeviceScope d(Device::cuda(0));
    gpu = fine_tune(path(".keras"), inputs[0]);
  }
  EXPECT_EQ(cpu.device, Device::cpu());
  EXPECT_EQ(gpu.device, Device::cuda(0)) << "the loaded model lives on the default device";
  ASSERT_EQ(cpu.losses.size(), gpu.losses.size());
  for (size_t e = 0; e < cpu.losses.size(); ++e) EXPECT_NEAR(gpu.losses[e], cpu.losses[e], tol) << "epoch " << e;
  auto compare = [&](const TensorList& a, const TensorList& b, const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_LE(keras::testing::max_abs_difference(a[i], b[i]), tol) << what << " " << i;
  };
  compare(cpu.weights, gpu.weights, "weight");
  compare(cpu.predictions, gpu.predictions, "prediction (0: saved on the device, loaded on the CPU)");
}

std::vector<FileCase> cases() {
  std::vector<FileCase> out;
  for (const char* m : {"mlp", "cnn", "two_inputs", "nested", "nested_seq", "nested_shared", "frozen", "nested_frozen"})
    out.push_back({kRoot, m});
  for (const std::string& stem : keras::testing::applications::stems_with(".input0.npy"))
    out.push_back({keras::testing::applications::kDir, stem});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Files, KerasFileOnDefaultGpu, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.stem; });

}  // namespace
