// Training on a second device, end to end: fit/evaluate/predict of models moved with
// model.to(cuda:0), against the same program on the CPU. On a machine with a GPU the device is
// real (float32 results within 1e-4 of the CPU's, the GPU's summation orders differ); elsewhere
// SimulatedCuda puts the CPU kernels behind Device::cuda(0), and results must then equal the CPU
// run bit for bit, which proves that placement (weights, optimizer slots, metric states,
// batches, constants made by layers and losses) keeps every tensor on the model's device.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <keras/keras.h>

#include "support/default_device.h"
#include "support/simulated_device.h"
#include "support/tensor_compare.h"

namespace k = keras;
namespace fs = std::filesystem;
using keras::testing::max_abs_difference;

namespace {

struct TrainRun {
  k::Device device;  // where the model ran
  k::TensorList weights;
  k::History history;
  k::Logs eval;
  k::Tensor predictions;
};

k::Tensor features(int64_t n, int64_t h, uint64_t seed) { return k::random::normal({n, h, h, 3}, 0.0, 1.0, seed); }
k::Tensor labels(int64_t n, uint64_t seed) {
  k::Tensor u = k::random::uniform({n}, 0.0, 4.0, seed);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::min(3, static_cast<int>(u.data<float>()[i]));
  return k::Tensor::from_vector(v, {n}, k::Device::cpu());
}

std::shared_ptr<k::Sequential> conv_model() {
  return std::make_shared<k::Sequential>(std::initializer_list<k::SequentialEntry>{
      k::layers::Input({8, 8, 3}),
      k::layers::Conv2D({.filters = 6, .kernel_size = 3, .padding = "same", .activation = "relu"}),
      k::layers::BatchNormalization(),
      k::layers::MaxPooling2D({.pool_size = 2}),
      k::layers::Flatten(),
      k::layers::Dropout({.rate = 0.25}),
      k::layers::Dense({.units = 16, .activation = "relu"}),
      k::layers::Dense({.units = 4, .activation = "softmax"}),
  });
}

// The model on `device`, or where it was built (the default device) when none is given. The
// data is made on the host, as loaders make it.
TrainRun train(std::optional<k::Device> device) {
  k::utils::set_random_seed(7);
  auto model = conv_model();
  if (device) model->to(*device);
  model->compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-2}),
                  .loss = "sparse_categorical_crossentropy",
                  .metrics = {"accuracy"}});
  k::Tensor x, y;
  {
    k::DeviceScope host(k::Device::cpu());
    x = features(96, 8, 1);
    y = labels(96, 2);
  }
  TrainRun r;
  r.device = model->device();
  r.history = model->fit(x, y, {.batch_size = 32, .epochs = 3, .verbose = 0, .shuffle = true});
  r.eval = model->evaluate(x, y, {.batch_size = 48, .verbose = 0});
  r.predictions = model->predict(x, {.batch_size = 40, .verbose = 0});
  r.weights = model->get_weights();
  return r;
}

void expect_same_run(const TrainRun& cpu, const TrainRun& gpu, double tol) {
  ASSERT_EQ(cpu.weights.size(), gpu.weights.size());
  for (size_t i = 0; i < cpu.weights.size(); ++i) {
    EXPECT_EQ(gpu.weights[i].device(), k::Device::cpu()) << "get_weights returns host copies";
    EXPECT_LE(max_abs_difference(gpu.weights[i], cpu.weights[i]), tol) << "weight " << i;
  }
  for (const auto& [name, values] : cpu.history.history()) {
    ASSERT_TRUE(gpu.history.history().count(name)) << name;
    for (size_t e = 0; e < values.size(); ++e)
      EXPECT_NEAR(gpu.history[name][e], values[e], std::max(tol, 1e-12)) << name << " epoch " << e;
  }
  for (const auto& [name, value] : cpu.eval.items()) EXPECT_NEAR(gpu.eval.at(name), value, std::max(tol, 1e-12)) << name;
  EXPECT_EQ(gpu.predictions.device(), k::Device::cpu()) << "predict returns host tensors";
  EXPECT_LE(max_abs_difference(gpu.predictions, cpu.predictions), tol);
}

}  // namespace

TEST(DeviceTraining, FitEvaluatePredictMatchTheCpu) {
  k::test_support::SimulatedCuda sim;
  expect_same_run(train(k::Device::cpu()), train(k::Device::cuda(0)), sim.active() ? 0.0 : 1e-4);
}

// A Keras user with a GPU: the process default device is the GPU, the model is never moved, the
// data is on the host, and fit shuffles (the batch gather ran on the default device before, and
// failed: "op 'take': expected all inputs on cpu, got input 1 on cuda:0").
TEST(DeviceTraining, GpuAsTheProcessDefaultTrainsOnHostData) {
  k::test_support::SimulatedCuda sim;
  TrainRun cpu = train(k::Device::cpu());
  k::test_support::DefaultDeviceScope gpu_default(k::Device::cuda(0));
  TrainRun gpu = train(std::nullopt);
  EXPECT_EQ(gpu.device, k::Device::cuda(0)) << "built on the default device";
  expect_same_run(cpu, gpu, sim.active() ? 0.0 : 1e-4);
}

TEST(DeviceTraining, TwoRunsAreBitIdenticalWithOpDeterminism) {
  k::test_support::SimulatedCuda sim;
  k::utils::enable_op_determinism();
  TrainRun a = train(k::Device::cuda(0)), b = train(k::Device::cuda(0));
  for (size_t i = 0; i < a.weights.size(); ++i) EXPECT_EQ(max_abs_difference(a.weights[i], b.weights[i]), 0.0) << "weight " << i;
  k::set_op_determinism(false);
}

TEST(DeviceTraining, WeightsSavedFromTheDeviceLoadOnTheCpu) {
  k::test_support::SimulatedCuda sim;
  k::utils::set_random_seed(3);
  auto on_device = conv_model();
  on_device->to(k::Device::cuda(0));
  on_device->compile({.optimizer = k::optimizers::SGD({.learning_rate = 0.1}), .loss = "sparse_categorical_crossentropy"});
  on_device->fit(features(32, 8, 4), labels(32, 5), {.batch_size = 16, .epochs = 1, .verbose = 0});
  fs::path path = fs::temp_directory_path() / ("device_training_" + std::to_string(::getpid()) + ".weights.h5");
  on_device->save_weights(path.string());
  auto on_cpu = conv_model();
  on_cpu->load_weights(path.string());
  fs::remove(path);
  k::TensorList a = on_device->get_weights(), b = on_cpu->get_weights();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(max_abs_difference(a[i], b[i]), 0.0) << "weight " << i;
  for (const k::Variable& v : on_device->weights()) EXPECT_EQ(v.value().device(), k::Device::cuda(0)) << v.path();
}
