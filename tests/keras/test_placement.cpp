// Device placement as a Keras user expects it: the default device (KERAS_DEVICE, else the first
// GPU, else the CPU), Model::to / Model::device, batches moved to the model's device, results and
// saved weights back on the host. The GPU tests skip without a CUDA device; the CPU ones run
// everywhere (ctest sets KERAS_DEVICE=cpu, so they stay on the CPU on a GPU machine too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <unistd.h>

#include "backend/cuda.h"
#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;
namespace fs = std::filesystem;

#define SKIP_WITHOUT_GPU()                                                                     \
  do {                                                                                         \
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason(); \
  } while (0)

namespace {
// Restores KERAS_DEVICE and forgets the resolved default when a test ends, so that the tests of
// this program do not see each other's environment.
class EnvGuard {
 public:
  EnvGuard() {
    if (const char* v = std::getenv("KERAS_DEVICE")) saved_ = v;
  }
  ~EnvGuard() {
    if (saved_) setenv("KERAS_DEVICE", saved_->c_str(), 1);
    else unsetenv("KERAS_DEVICE");
    reset_default_device();
  }

 private:
  std::optional<std::string> saved_;
};

// A scratch folder per test and process (ctest may run tests at once).
fs::path scratch(const std::string& test) {
  fs::path dir = fs::temp_directory_path() / ("keras_placement_" + test + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

// y = x . w + 0.5 with a fixed w: a toy regression a Dense layer learns.
std::pair<Tensor, Tensor> regression_data(int64_t n) {
  Tensor x = random::normal({n, 4}, 0, 1, 7, DType::float32);
  auto xv = x.to_vector<float>();
  const float w[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  std::vector<float> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float s = 0.5f;
    for (int j = 0; j < 4; ++j) s += xv[static_cast<size_t>(4 * i + j)] * w[j];
    y[static_cast<size_t>(i)] = s;
  }
  return {x, Tensor::from_vector(y, {n, 1}, Device::cpu())};
}

std::shared_ptr<Sequential> dense_model() {
  return std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({4}), L::Dense({.units = 8, .activation = "tanh"}), L::Dense({.units = 1})});
}

// Two models with the same weights: the second a copy of the first (built on the CPU).
std::pair<std::shared_ptr<Sequential>, std::shared_ptr<Sequential>> twin_dense_models() {
  auto a = dense_model(), b = dense_model();
  b->set_weights(a->get_weights());
  return {a, b};
}

void expect_weights_near(Model& a, Model& b, double tol) {
  auto wa = a.weights(), wb = b.weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    auto va = wa[i].value().to(Device::cpu()).to_vector<float>();
    auto vb = wb[i].value().to(Device::cpu()).to_vector<float>();
    ASSERT_EQ(va.size(), vb.size()) << wa[i].path();
    for (size_t j = 0; j < va.size(); ++j) EXPECT_NEAR(va[j], vb[j], tol) << wa[i].path() << " [" << j << "]";
  }
}

void expect_tensors_near(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  auto va = a.to(Device::cpu()).to_vector<float>(), vb = b.to(Device::cpu()).to_vector<float>();
  for (size_t j = 0; j < va.size(); ++j) EXPECT_NEAR(va[j], vb[j], tol) << "[" << j << "]";
}

// The model tests build on the CPU whatever the machine (run outside ctest, a GPU machine's
// default would be cuda:0), and leave the default to be resolved again.
class Placement : public ::testing::Test {
 protected:
  void SetUp() override { set_default_device(Device::cpu()); }
  void TearDown() override { reset_default_device(); }
};
class PlacementGpu : public Placement {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
    Placement::SetUp();
  }
};

FitOptions quiet_fit(int epochs) { return {.batch_size = 16, .epochs = epochs, .verbose = 0, .shuffle = false}; }
}  // namespace

// ---------------------------------------------------------------- default device

TEST(DefaultDevice, ResolutionRules) {
  EXPECT_EQ(resolve_default_device(nullptr, 0), Device::cpu());
  EXPECT_EQ(resolve_default_device("", 0), Device::cpu());
  EXPECT_EQ(resolve_default_device(nullptr, 2), Device::cuda(0));
  EXPECT_EQ(resolve_default_device("cpu", 2), Device::cpu());
  EXPECT_EQ(resolve_default_device("cuda", 1), Device::cuda(0));
  EXPECT_EQ(resolve_default_device("gpu", 1), Device::cuda(0));
  EXPECT_EQ(resolve_default_device("cuda:1", 2), Device::cuda(1));
}

TEST(DefaultDevice, BadValueNamesTheVariableAndTheForms) {
  try {
    resolve_default_device("tpu:0", 0);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("KERAS_DEVICE"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'tpu:0'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:<index>"), std::string::npos) << msg;
  }
}

// The documented choice: a CUDA device the process does not have fails when the default is
// resolved (the first default_device()), as a DeviceError naming the variable and the value.
TEST(DefaultDevice, MissingGpuIsADeviceErrorAtResolution) {
  EXPECT_THROW(resolve_default_device("cuda:0", 0), DeviceError);
  EXPECT_THROW(resolve_default_device("cuda:2", 2), DeviceError);
  try {
    resolve_default_device("cuda:3", 0);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("KERAS_DEVICE"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'cuda:3'"), std::string::npos) << msg;
  }
  if (cuda::device_count() > 0) return;
  EnvGuard guard;
  setenv("KERAS_DEVICE", "cuda:0", 1);
  reset_default_device();
  EXPECT_THROW(default_device(), DeviceError);
  EXPECT_THROW(default_device(), DeviceError);  // not remembered: every call says so
}

TEST(DefaultDevice, EnvironmentIsReadOnceAndSetWins) {
  EnvGuard guard;
  setenv("KERAS_DEVICE", "cpu", 1);
  reset_default_device();
  EXPECT_EQ(default_device(), Device::cpu());
  setenv("KERAS_DEVICE", "bogus", 1);
  EXPECT_EQ(default_device(), Device::cpu());  // resolved once
  reset_default_device();
  EXPECT_THROW(default_device(), ValueError);
  set_default_device(Device::cpu());  // an explicit choice needs no environment
  EXPECT_EQ(default_device(), Device::cpu());
}

TEST(DefaultDevice, CpuWithoutGpu) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is present";
  EnvGuard guard;
  unsetenv("KERAS_DEVICE");
  reset_default_device();
  EXPECT_EQ(default_device(), Device::cpu());
  EXPECT_EQ(dense_model()->device(), Device::cpu());
}

TEST(DefaultDevice, FirstGpuWhenPresent) {
  SKIP_WITHOUT_GPU();
  EnvGuard guard;
  unsetenv("KERAS_DEVICE");
  reset_default_device();
  EXPECT_EQ(default_device(), Device::cuda(0));
  // Weights are created on the default device in effect when the layer is built.
  auto model = dense_model();
  EXPECT_EQ(model->device(), Device::cuda(0));
  for (const auto& v : model->weights()) EXPECT_EQ(v.value().device(), Device::cuda(0)) << v.path();
}

// ---------------------------------------------------------------- on the CPU

TEST_F(Placement, ToCpuIsANoOpThatKeepsWeights) {
  auto model = dense_model();
  Variable kernel = model->weights()[0];
  const void* data = kernel.value().raw_data();
  TensorList before = model->get_weights();
  model->to(Device::cpu());
  EXPECT_EQ(model->device(), Device::cpu());
  EXPECT_TRUE(kernel.same(model->weights()[0]));
  EXPECT_EQ(kernel.value().raw_data(), data);  // not even copied
  TensorList after = model->get_weights();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].to_vector<float>(), after[i].to_vector<float>());
}

TEST_F(Placement, FitEvaluatePredictUnchangedOnCpu) {
  auto [x, y] = regression_data(64);
  auto [a, b] = twin_dense_models();
  a->compile({.optimizer = "adam", .loss = "mse"});
  b->compile({.optimizer = "adam", .loss = "mse"});
  b->to(Device::cpu());
  History ha = a->fit(x, y, quiet_fit(3));
  History hb = b->fit(x, y, quiet_fit(3));
  EXPECT_EQ(ha["loss"], hb["loss"]);
  expect_weights_near(*a, *b, 0);
  EXPECT_EQ(a->evaluate(x, y, {.verbose = 0}).at("loss"), b->evaluate(x, y, {.verbose = 0}).at("loss"));
  Tensor pa = a->predict(x), pb = b->predict(x);
  EXPECT_EQ(pb.device(), Device::cpu());
  EXPECT_EQ(pa.to_vector<float>(), pb.to_vector<float>());
  EXPECT_EQ(b->predict_on_batch(x).device(), Device::cpu());
}

TEST_F(Placement, SaveAfterToCpuRoundTrips) {
  fs::path dir = scratch("save_cpu");
  auto [x, y] = regression_data(32);
  auto model = dense_model();
  model->compile({.optimizer = "adam", .loss = "mse"});
  model->fit(x, y, quiet_fit(1));
  model->to(Device::cpu());
  const std::string path = (dir / "m.weights.h5").string();
  model->save_weights(path);
  auto fresh = dense_model();
  fresh->load_weights(path);
  expect_weights_near(*model, *fresh, 0);
  fs::remove_all(dir);
}

// A Sequential moved before it has a graph builds its layers where the model was moved.
TEST_F(Placement, WeightsBuiltAfterToFollowTheModel) {
  Sequential model({L::Dense({.units = 3}), L::Dense({.units = 1})});
  model.to(Device::cpu());
  Tensor out = model.predict_on_batch(Tensor::ones({2, 5}, DType::float32, Device::cpu()));
  EXPECT_EQ(out.shape(), (Shape{2, 1}));
  for (const auto& v : model.weights()) EXPECT_EQ(v.value().device(), Device::cpu()) << v.path();
}

// ---------------------------------------------------------------- on a GPU

TEST_F(PlacementGpu, DenseRegressionMatchesCpu) {
  auto [x, y] = regression_data(64);
  auto [cpu_model, gpu_model] = twin_dense_models();
  Variable kernel = gpu_model->weights()[0];
  gpu_model->to(Device::cuda(0));
  EXPECT_EQ(gpu_model->device(), Device::cuda(0));
  EXPECT_EQ(kernel.value().device(), Device::cuda(0));  // the old handle sees the move
  for (const auto& v : gpu_model->weights()) EXPECT_EQ(v.value().device(), Device::cuda(0)) << v.path();
  cpu_model->compile({.optimizer = "adam", .loss = "mse"});
  gpu_model->compile({.optimizer = "adam", .loss = "mse"});
  History hc = cpu_model->fit(x, y, quiet_fit(3));
  History hg = gpu_model->fit(x, y, quiet_fit(3));
  ASSERT_EQ(hc["loss"].size(), 3u);
  ASSERT_EQ(hg["loss"].size(), 3u);
  for (size_t e = 0; e < 3; ++e) EXPECT_NEAR(hc["loss"][e], hg["loss"][e], 1e-4) << "epoch " << e;
  expect_weights_near(*cpu_model, *gpu_model, 1e-4);
  for (const auto& v : gpu_model->optimizer()->variables()) {
    if (v.name() != "iteration" && v.name() != "learning_rate") {
      EXPECT_EQ(v.value().device(), Device::cuda(0)) << v.path();
    }
  }
  EXPECT_NEAR(cpu_model->evaluate(x, y, {.verbose = 0}).at("loss"), gpu_model->evaluate(x, y, {.verbose = 0}).at("loss"),
              1e-4);
  Tensor pc = cpu_model->predict(x), pg = gpu_model->predict(x);
  EXPECT_EQ(pg.device(), Device::cpu());
  expect_tensors_near(pc, pg, 1e-4);
  EXPECT_EQ(gpu_model->predict_on_batch(x).device(), Device::cpu());
}

// Slots built on the CPU move with the model; training goes on where it left off.
TEST_F(PlacementGpu, ToAfterTrainingMovesOptimizerSlots) {
  auto [x, y] = regression_data(32);
  auto [cpu_model, gpu_model] = twin_dense_models();
  cpu_model->compile({.optimizer = "adam", .loss = "mse"});
  gpu_model->compile({.optimizer = "adam", .loss = "mse"});
  cpu_model->train_on_batch(x, y);
  gpu_model->train_on_batch(x, y);
  gpu_model->to(Device::cuda(0));
  double lc = cpu_model->train_on_batch(x, y).at("loss");
  double lg = gpu_model->train_on_batch(x, y).at("loss");
  EXPECT_NEAR(lc, lg, 1e-4);
  EXPECT_EQ(gpu_model->optimizer()->iterations(), 2);
  expect_weights_near(*cpu_model, *gpu_model, 1e-4);
}

TEST_F(PlacementGpu, SaveWeightsFromGpuLoadsOnCpu) {
  fs::path dir = scratch("save_gpu");
  auto [x, y] = regression_data(32);
  auto model = dense_model();
  model->to(Device::cuda(0));
  model->compile({.optimizer = "adam", .loss = "mse"});
  model->fit(x, y, quiet_fit(1));
  const std::string path = (dir / "m.weights.h5").string();
  model->save_weights(path);
  auto cpu = dense_model();
  cpu->load_weights(path);
  for (const auto& v : cpu->weights()) EXPECT_EQ(v.value().device(), Device::cpu()) << v.path();
  expect_weights_near(*model, *cpu, 0);
  // And back: loading writes into the variables where they live.
  auto gpu = dense_model();
  gpu->to(Device::cuda(0));
  gpu->load_weights(path);
  for (const auto& v : gpu->weights()) EXPECT_EQ(v.value().device(), Device::cuda(0)) << v.path();
  expect_weights_near(*model, *gpu, 0);
  fs::remove_all(dir);
}

TEST_F(PlacementGpu, TensorOnAnotherGpuIsADeviceError) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  auto model = dense_model();
  model->to(Device::cuda(0));
  Tensor x = Tensor::ones({2, 4}, DType::float32, Device::cuda(1));
  try {
    model->predict_on_batch(x);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:1"), std::string::npos) << msg;
  }
}

TEST_F(PlacementGpu, ConvBatchNormPoolDenseTrainsLikeCpu) {
  const int64_t n = 32;
  Tensor x = random::uniform({n, 8, 8, 1}, 0, 1, 11, DType::float32);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = i % 3;
  Tensor y = Tensor::from_vector(labels, {n}, Device::cpu());
  auto make = [] {
    return std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
        L::Input({8, 8, 1}), L::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same"}), L::BatchNormalization(),
        L::ReLU(), L::MaxPooling2D({.pool_size = 2}), L::Flatten(), L::Dense({.units = 3, .activation = "softmax"})});
  };
  auto cpu_model = make(), gpu_model = make();
  gpu_model->set_weights(cpu_model->get_weights());
  gpu_model->to(Device::cuda(0));
  for (const auto& v : gpu_model->weights()) EXPECT_EQ(v.value().device(), Device::cuda(0)) << v.path();
  for (auto* m : {cpu_model.get(), gpu_model.get()})
    m->compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  History hc = cpu_model->fit(x, y, quiet_fit(2));
  History hg = gpu_model->fit(x, y, quiet_fit(2));
  for (size_t e = 0; e < 2; ++e) EXPECT_NEAR(hc["loss"][e], hg["loss"][e], 1e-3) << "epoch " << e;
  // Moving statistics (non-trainable) trained on the GPU too.
  expect_weights_near(*cpu_model, *gpu_model, 1e-3);
  Tensor pc = cpu_model->predict(x), pg = gpu_model->predict(x);
  EXPECT_EQ(pg.device(), Device::cpu());
  expect_tensors_near(pc, pg, 1e-3);
}

// Callbacks that save read the weights where they live: a .keras checkpoint of a GPU model
// (weights and optimizer slots) loads into a CPU process's model with the same weights.
TEST_F(PlacementGpu, CheckpointOfGpuModelLoadsOnCpu) {
  fs::path dir = scratch("checkpoint_gpu");
  const std::string path = (dir / "ckpt.keras").string();
  auto [x, y] = regression_data(32);
  auto model = dense_model();
  model->to(Device::cuda(0));
  model->compile({.optimizer = "adam", .loss = "mse"});
  FitOptions o = quiet_fit(2);
  o.callbacks = {callbacks::ModelCheckpoint({.filepath = path, .monitor = "loss"})};
  model->fit(x, y, o);
  auto loaded = load_model(path);
  for (const auto& v : loaded->weights()) EXPECT_EQ(v.value().device(), Device::cpu()) << v.path();
  expect_weights_near(*model, *loaded, 0);
  fs::remove_all(dir);
}
