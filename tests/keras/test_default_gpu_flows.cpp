// Everyday Keras programs on a machine whose default device is the GPU, as a Keras user with one
// runs them: nothing is moved by hand, the data comes from the host. Each program runs once with
// the CPU as the process default and once with cuda:0 (SimulatedCuda on machines without a GPU:
// then the two runs must agree bit for bit, and a tensor made on the wrong device is a DeviceError
// here as on a real GPU). The H100 run of 2026-11-27 found fit's batch gather failing this way.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <keras/keras.h>
#include <unistd.h>

#include "support/default_device.h"
#include "support/simulated_device.h"

namespace k = keras;
namespace L = keras::layers;
namespace fs = std::filesystem;

namespace {

struct HostData {
  k::Tensor x, y;
};

// 120 samples of 6 features, 3 classes, made on the host as loaders make them.
HostData host_data(uint64_t seed) {
  k::DeviceScope host(k::Device::cpu());
  k::Tensor x = k::random::normal({120, 6}, 0.0, 1.0, seed);
  std::vector<float> v = x.to_vector<float>();
  std::vector<int32_t> labels(120);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = v[i * 6] + v[i * 6 + 1] > 0.5f ? 2 : v[i * 6 + 2] > 0 ? 1 : 0;
  return {x, k::Tensor::from_vector(labels, {120}, k::Device::cpu())};
}

std::shared_ptr<k::Model> functional_model() {
  auto in = L::Input({6});
  auto h = L::Dense({.units = 16, .activation = "relu"})(in);
  h = L::BatchNormalization()(h);
  h = L::Dropout({.rate = 0.2})(h);
  auto out = L::Dense({.units = 3, .activation = "softmax"})(h);
  return std::make_shared<k::Model>(in, out);
}

void compile(k::Model& model) {
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy", "sparse_top_k_categorical_accuracy"}});
}

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("default_gpu_" + std::to_string(::getpid()) + "_" + name);
}

// What a program leaves behind: its logs, its predictions and its weights, all on the host.
struct Outcome {
  k::Device device;  // where the program's model ran
  std::vector<double> numbers;
  k::TensorList tensors;
};

// What fit left: where the model ran, every epoch's logs and the trained weights.
Outcome after_fit(const k::Model& model, const k::History& history) {
  Outcome o{model.device()};
  for (const auto& [name, values] : history.history()) o.numbers.insert(o.numbers.end(), values.begin(), values.end());
  for (const auto& t : model.get_weights()) o.tensors.push_back(t);
  return o;
}

// fit with validation_data, class weights and callbacks (EarlyStopping restoring the best weights,
// ReduceLROnPlateau, ModelCheckpoint keeping the best .keras file), then evaluate with sample
// weights, predict, and the checkpoint loaded back and predicting.
Outcome tensors_program() {
  k::utils::set_random_seed(11);
  HostData train = host_data(1), val = host_data(2);
  auto model = functional_model();
  compile(*model);
  const fs::path best = scratch("best.keras");
  k::History h = model->fit(
      train.x, train.y,
      {.batch_size = 16, .epochs = 4, .verbose = 0,
       .callbacks = {k::callbacks::EarlyStopping({.patience = 1, .restore_best_weights = true}),
                     k::callbacks::ReduceLROnPlateau({.patience = 1}),
                     k::callbacks::ModelCheckpoint({.filepath = best.string(), .save_best_only = true})},
       .validation_data = k::ValidationData{val.x, val.y},
       .class_weight = {{0, 1.0}, {1, 2.0}, {2, 0.5}}});
  Outcome o = after_fit(*model, h);
  k::Tensor w = k::Tensor::full({120}, 0.5, k::DType::float32, k::Device::cpu());
  for (const auto& [name, value] : model->evaluate(val.x, val.y, {.batch_size = 50, .verbose = 0, .sample_weight = w}).items())
    o.numbers.push_back(value);
  o.tensors.push_back(model->predict(val.x, {.batch_size = 33}));
  auto restored = k::load_model(best.string());
  fs::remove(best);
  o.tensors.push_back(restored->predict(val.x, {.batch_size = 64}));
  return o;
}

// A tf.data-style pipeline (shuffle, map, batch, prefetch) into fit, evaluate and predict, with a
// frozen first layer as in fine-tuning; the map applies a Normalization layer adapted on the
// host data, as Keras's preprocessing guide does.
Outcome dataset_program() {
  k::utils::set_random_seed(12);
  HostData train = host_data(3);
  L::Normalization norm;
  k::adapt(*norm, k::data::Dataset::from_tensor_slices({train.x}).batch(32));
  auto preprocess = [norm](const k::TensorList& e) { return k::TensorList{(*norm)(e[0]) * 0.5, e[1]}; };
  auto ds = k::data::Dataset::from_tensor_slices({train.x, train.y}).shuffle(120, 5).batch(24).map(preprocess, 2).prefetch(2);
  auto model = functional_model();
  model->layers()[1]->set_trainable(false);
  compile(*model);
  k::History h = model->fit(ds, {.epochs = 2, .verbose = 0});
  Outcome o = after_fit(*model, h);
  for (const auto& [name, value] : model->evaluate(ds, {.verbose = 0}).items()) o.numbers.push_back(value);
  o.tensors.push_back(model->predict(k::data::Dataset::from_tensor_slices({train.x}).batch(50)));
  return o;
}

// A custom training loop: GradientTape and optimizer->apply over host batches moved by hand.
Outcome custom_loop_program() {
  k::utils::set_random_seed(13);
  HostData train = host_data(4);
  auto model = functional_model();
  auto optimizer = k::optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9});
  auto loss_fn = k::losses::get("sparse_categorical_crossentropy");
  Outcome o{model->device()};
  for (int64_t lo = 0; lo < 120; lo += 40) {
    k::Tensor x = train.x.slice_batch(lo, lo + 40).to(model->device());
    k::Tensor y = train.y.slice_batch(lo, lo + 40).to(model->device());
    std::vector<k::Variable> vars = model->trainable_weights();
    k::TensorList sources;
    for (const auto& v : vars) sources.push_back(v.value());
    k::GradientTape tape;
    k::Tensor loss = (*loss_fn)(y, (*model)(x, k::CallArgs{.training = true}));
    optimizer->apply(tape.gradient(loss, sources), vars);
    o.numbers.push_back(loss.item());
  }
  for (const auto& t : model->get_weights()) o.tensors.push_back(t);
  return o;
}

// A text model: padded token ids from the host into Embedding(mask_zero), a masked LSTM, causal
// self-attention, masked pooling and a softmax head.
Outcome text_program() {
  k::utils::set_random_seed(14);
  std::vector<int32_t> ids(16 * 10, 0);
  std::vector<int32_t> labels(16);
  for (int i = 0; i < 16; ++i) {
    const int len = 3 + i % 7;
    for (int t = 0; t < len; ++t) ids[static_cast<size_t>(i * 10 + t)] = 1 + (i * 7 + t * 3) % 19;
    labels[static_cast<size_t>(i)] = len % 2;
  }
  const k::Tensor x = k::Tensor::from_vector(ids, {16, 10}, k::Device::cpu());
  const k::Tensor y = k::Tensor::from_vector(labels, {16}, k::Device::cpu());
  auto in = L::Input({10}, {.dtype = "int32"});
  auto h = L::Embedding({.input_dim = 20, .output_dim = 8, .mask_zero = true})(in);
  h = L::LSTM({.units = 8, .return_sequences = true})(h);
  k::CallArgs causal;
  causal.options = {{"use_causal_mask", true}};
  h = L::MultiHeadAttention({.num_heads = 2, .key_dim = 4})(std::vector<k::KerasTensor>{h, h}, causal)[0];
  auto out = L::Dense({.units = 2, .activation = "softmax"})(L::GlobalAveragePooling1D()(h));
  auto model = std::make_shared<k::Model>(in, out);
  compile(*model);
  k::History hist = model->fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0});
  Outcome o = after_fit(*model, hist);
  o.tensors.push_back(model->predict(x, {.batch_size = 5}));
  return o;
}

// The logging and recovery callbacks: TensorBoard with weight histograms, CSVLogger,
// BackupAndRestore, TerminateOnNaN and a learning-rate schedule.
Outcome logging_callbacks_program() {
  k::utils::set_random_seed(15);
  HostData train = host_data(5);
  auto model = functional_model();
  compile(*model);
  const fs::path dir = scratch("logs");
  k::History h = model->fit(
      train.x, train.y,
      {.batch_size = 32, .epochs = 2, .verbose = 0,
       .callbacks = {k::callbacks::TensorBoard({.log_dir = (dir / "tb").string(), .histogram_freq = 1}),
                     k::callbacks::CSVLogger((dir / "log.csv").string()),
                     k::callbacks::BackupAndRestore({.backup_dir = (dir / "backup").string()}),
                     k::callbacks::TerminateOnNaN(),
                     k::callbacks::LearningRateScheduler([](int epoch, double lr) { return epoch ? lr * 0.5 : lr; })},
       .validation_split = 0.25});
  EXPECT_TRUE(fs::exists(dir / "log.csv"));
  EXPECT_TRUE(fs::exists(dir / "tb" / "train"));
  fs::remove_all(dir);
  return after_fit(*model, h);
}

// Augmentation in a Dataset map over host images, as Keras's guides do it (weightless layers:
// they compute where the images are), and a Bidirectional LSTM called on host sequences.
Outcome augmentation_program() {
  k::utils::set_random_seed(16);
  k::Tensor images, sequences;
  {
    k::DeviceScope host(k::Device::cpu());
    images = k::random::uniform({12, 8, 8, 3}, 0.0, 1.0, 31);
    sequences = k::random::normal({3, 5, 4}, 0.0, 1.0, 32);
  }
  k::Sequential augment({L::Input({8, 8, 3}), L::RandomFlip({.seed = 1}), L::RandomRotation({.factor = 0.1, .seed = 2}),
                         L::RandomZoom({.height_factor = 0.1, .seed = 3}),
                         L::RandomTranslation({.height_factor = 0.1, .width_factor = 0.1, .seed = 4}),
                         L::RandomBrightness({.factor = 0.2, .value_range = {0, 1}, .seed = 5}),
                         L::RandomContrast({.factor = 0.2, .value_range = {0, 1}, .seed = 6})});
  auto ds = k::data::Dataset::from_tensor_slices({images}).batch(4).map(
      [&augment](const k::TensorList& e) { return k::TensorList{augment(e[0], k::CallArgs{.training = true})}; });
  Outcome o{k::default_device()};
  for (const auto& batch : ds.iterator()) o.tensors.push_back(batch[0].to(k::Device::cpu()));
  L::Bidirectional both({.layer = L::LSTM({.units = 3, .return_sequences = true})});
  o.tensors.push_back((*both)(sequences).to(k::Device::cpu()));
  return o;
}

// keras.applications' preprocess_input on host images, in every mode (its constants were made on
// the default device).
Outcome preprocess_program() {
  k::Tensor images;
  {
    k::DeviceScope host(k::Device::cpu());
    images = k::random::uniform({2, 4, 4, 3}, 0.0, 255.0, 21);
  }
  Outcome o{k::default_device()};
  for (const char* mode : {"caffe", "tf", "torch"})
    o.tensors.push_back(k::applications::imagenet_utils::preprocess_input(images, {.mode = mode}).to(k::Device::cpu()));
  return o;
}

// Runs `program` with the CPU, then cuda:0, as the process default, and compares what it left:
// bit for bit when simulated, unless `simulated_tol` allows for ops that take other paths off the
// CPU (the recurrent layers' plain loops instead of oneDNN's); within 1e-4 on a real GPU.
void expect_same_on_default_gpu(Outcome (*program)(), double simulated_tol = 0.0) {
  k::test_support::SimulatedCuda sim;
  const double tol = sim.active() ? simulated_tol : 1e-4;
  Outcome cpu{k::Device::cpu()}, gpu{k::Device::cpu()};
  {
    k::test_support::DefaultDeviceScope d(k::Device::cpu());
    cpu = program();
  }
  {
    k::test_support::DefaultDeviceScope d(k::Device::cuda(0));
    gpu = program();
  }
  EXPECT_EQ(cpu.device, k::Device::cpu());
  EXPECT_EQ(gpu.device, k::Device::cuda(0)) << "the program ran on the default device";
  ASSERT_EQ(cpu.numbers.size(), gpu.numbers.size());
  for (size_t i = 0; i < cpu.numbers.size(); ++i) EXPECT_NEAR(gpu.numbers[i], cpu.numbers[i], tol) << "number " << i;
  ASSERT_EQ(cpu.tensors.size(), gpu.tensors.size());
  for (size_t i = 0; i < cpu.tensors.size(); ++i) {
    EXPECT_EQ(gpu.tensors[i].device(), k::Device::cpu()) << "tensor " << i << " is given back on the host";
    std::vector<double> a = cpu.tensors[i].to_vector<double>(), b = gpu.tensors[i].to_vector<double>();
    ASSERT_EQ(a.size(), b.size()) << "tensor " << i;
    for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(b[j], a[j], tol) << "tensor " << i << " element " << j;
  }
}

}  // namespace

TEST(DefaultGpu, TensorsWithCallbacksValidationAndCheckpoints) { expect_same_on_default_gpu(tensors_program); }
TEST(DefaultGpu, DatasetPipelineAndFrozenLayer) { expect_same_on_default_gpu(dataset_program); }
TEST(DefaultGpu, CustomTrainingLoop) { expect_same_on_default_gpu(custom_loop_program); }
TEST(DefaultGpu, PreprocessInputOnHostImages) { expect_same_on_default_gpu(preprocess_program); }
TEST(DefaultGpu, TextModelWithMasksAndCausalAttention) { expect_same_on_default_gpu(text_program); }
TEST(DefaultGpu, LoggingAndRecoveryCallbacks) { expect_same_on_default_gpu(logging_callbacks_program); }
TEST(DefaultGpu, AugmentationInADatasetMapAndABidirectionalCall) { expect_same_on_default_gpu(augmentation_program, 1e-6); }
