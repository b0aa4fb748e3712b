// The workload table and the worker that times our framework on one workload.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "backend/device_scope.h"
#include "backend/op_profile.h"
#include "bench.h"
#include "keras/applications/mobilenet_v2.h"
#include "keras/applications/resnet.h"
#include "keras/applications/resnet20.h"

namespace bench {
namespace {

namespace k = keras;

// The loss torch_bench.py uses: CrossEntropyLoss on logits.
void compile_for_benchmark(k::Model& model) {
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = k::losses::SparseCategoricalCrossentropy({.from_logits = true})});
}

std::shared_ptr<k::Model> build_mlp() {
  auto model = std::make_shared<k::Sequential>(std::initializer_list<k::SequentialEntry>{
      k::layers::Input({784}),
      k::layers::Dense({.units = 512, .activation = "relu"}),
      k::layers::Dense({.units = 512, .activation = "relu"}),
      k::layers::Dense({.units = 10}),
  });
  compile_for_benchmark(*model);
  return model;
}

std::shared_ptr<k::Model> build_cnn() {
  auto model = std::make_shared<k::Sequential>(std::initializer_list<k::SequentialEntry>{
      k::layers::Input({28, 28, 1}),
      k::layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}),
      k::layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}),
      k::layers::MaxPooling2D({.pool_size = 2}),
      k::layers::Flatten(),
      k::layers::Dense({.units = 128, .activation = "relu"}),
      k::layers::Dense({.units = 10}),
  });
  compile_for_benchmark(*model);
  return model;
}

// torch_bench's resnet workload trains with SGD 0.1, momentum 0.9.
std::shared_ptr<k::Model> build_resnet() {
  auto model = k::applications::ResNet20({.classifier_activation = "linear"});
  model->compile({.optimizer = k::optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}),
                  .loss = k::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  return model;
}

// sequence_bench.py's lstm: two stacked LSTMs, the classifier on the last output.
std::shared_ptr<k::Model> build_lstm() {
  auto model = std::make_shared<k::Sequential>(std::initializer_list<k::SequentialEntry>{
      k::layers::Input({50, 128}),
      k::layers::LSTM({.units = 256, .return_sequences = true}),
      k::layers::LSTM({.units = 256}),
      k::layers::Dense({.units = 10}),
  });
  compile_for_benchmark(*model);
  return model;
}

// sequence_bench.py's transformer: post-norm encoder layers as nn.TransformerEncoderLayer
// (dropout 0), mean over the tokens, a linear classifier.
std::shared_ptr<k::Model> build_transformer() {
  constexpr int64_t kModel = 128, kHeads = 4, kFeedForward = 512;
  auto inputs = k::layers::Input({128, kModel});
  k::KerasTensor x = inputs;
  for (int layer = 0; layer < 4; ++layer) {
    auto attention = k::layers::MultiHeadAttention({.num_heads = kHeads, .key_dim = kModel / kHeads})(
        std::vector<k::KerasTensor>{x, x})[0];
    x = k::layers::LayerNormalization({.epsilon = 1e-5})(k::layers::Add()({x, attention}));
    auto ff = k::layers::Dense({.units = kFeedForward, .activation = "relu"})(x);
    ff = k::layers::Dense({.units = kModel})(ff);
    x = k::layers::LayerNormalization({.epsilon = 1e-5})(k::layers::Add()({x, ff}));
  }
  auto outputs = k::layers::Dense({.units = 10})(k::layers::GlobalAveragePooling1D()(x));
  auto model = std::make_shared<k::Model>(inputs, outputs);
  compile_for_benchmark(*model);
  return model;
}

// torchvision_bench.py trains its networks with SGD 0.01, momentum 0.9 (ImageNet's usual
// momentum; a smaller rate than ResNet-20's because the batches are small).
void compile_imagenet(k::Model& model) {
  model.compile({.optimizer = k::optimizers::SGD({.learning_rate = 0.01, .momentum = 0.9}),
                 .loss = k::losses::SparseCategoricalCrossentropy({.from_logits = true})});
}

// Logits, like torchvision's classifiers.
std::shared_ptr<k::Model> build_mobilenet_v2() {
  auto model = k::applications::MobileNetV2({.input_shape = {224, 224, 3}, .classifier_activation = "linear"});
  compile_imagenet(*model);
  return model;
}

std::shared_ptr<k::Model> build_resnet50() {
  auto model = k::applications::ResNet50({.input_shape = {224, 224, 3}, .classifier_activation = "linear"});
  compile_imagenet(*model);
  return model;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Batch {
  k::Tensor x, y;
};

// 8 batches of N(0, 1) inputs and uniform labels in [0, classes), as torch_bench.make_pool.
std::vector<Batch> make_pool(const Workload& w, int n = 8) {
  k::DeviceScope host(k::Device::cpu());  // made and read on the host, whatever the default device
  k::Generator gen(1234);
  std::vector<Batch> pool;
  k::Shape shape{w.batch};
  shape.insert(shape.end(), w.input.begin(), w.input.end());
  for (int i = 0; i < n; ++i) {
    k::Tensor x = k::random::normal(shape, 0.0, 1.0, gen);
    k::Tensor u = k::random::uniform({w.batch}, 0.0, static_cast<double>(w.classes), gen);
    std::vector<int32_t> labels(static_cast<size_t>(w.batch));
    for (int64_t j = 0; j < w.batch; ++j)
      labels[static_cast<size_t>(j)] = std::min(static_cast<int>(w.classes) - 1, static_cast<int>(u.data<float>()[j]));
    pool.push_back({x, k::Tensor::from_vector(labels, {w.batch})});
  }
  return pool;
}

// torch_bench.timed, step for step.
// `sync` waits for queued device work (a no-op on the CPU), as torch.cuda.synchronize ends
// torch_gpu.py's timed runs.
template <class Step, class Sync>
nlohmann::json timed(Step&& step, Sync&& sync, const std::vector<Batch>& pool, int64_t batch, const TimingOptions& o) {
  auto t0 = Clock::now();
  for (int i = 0; i < o.warmup; ++i) step(pool[static_cast<size_t>(i) % pool.size()]);
  sync();
  double per_step = seconds_since(t0) / std::max(o.warmup, 1);
  int64_t steps = std::max<int64_t>(5, static_cast<int64_t>(std::ceil(o.min_time / std::max(per_step, 1e-6))));
  std::vector<double> rates;
  size_t next = 0;
  for (int r = 0; r < o.repeats; ++r) {
    auto t = Clock::now();
    for (int64_t s = 0; s < steps; ++s) step(pool[next++ % pool.size()]);
    sync();
    rates.push_back(static_cast<double>(steps * batch) / seconds_since(t));
  }
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  double mean = std::accumulate(rates.begin(), rates.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (double r : rates) var += (r - mean) * (r - mean);
  return {{"samples_per_s_median", median},
          {"samples_per_s_min", sorted.front()},
          {"samples_per_s_max", sorted.back()},
          {"cv", std::sqrt(var / static_cast<double>(n)) / mean},
          {"repeats", o.repeats},
          {"steps_per_repeat", steps},
          {"all", rates}};
}

}  // namespace

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> table = {
      {.name = "mlp", .description = "Dense 512 relu, Dense 512 relu, Dense 10 (logits)", .input = {784}, .batch = 128,
       .optimizer = "Adam 1e-3", .build = build_mlp},
      {.name = "cnn",
       .description = "Conv2D 32 3x3 relu, Conv2D 64 3x3 relu, MaxPool 2, Flatten, Dense 128 relu, Dense 10",
       .input = {28, 28, 1}, .batch = 128, .optimizer = "Adam 1e-3", .build = build_cnn},
      {.name = "resnet", .description = "ResNet-20 (3 stages x 3 basic blocks, 16/32/64 filters, BatchNorm)",
       .input = {32, 32, 3}, .batch = 64, .optimizer = "SGD 0.1, momentum 0.9", .build = build_resnet},
      // The ImageNet-size networks against torchvision's: MobileNetV2 for inference, ResNet50 for
      // training (torchvision's resnet50 is v1.5, stride 2 in the 3x3 convolutions, 6% more MACs
      // than Keras's v1, stride 2 in the first 1x1: the driver reports the per-FLOP ratio too).
      {.name = "mobilenet_v2", .description = "MobileNetV2 alpha 1.0 (torchvision mobilenet_v2), logits",
       .input = {224, 224, 3}, .batch = 32, .optimizer = "SGD 0.01, momentum 0.9", .classes = 1000,
       .mode = "infer", .torch_script = "torchvision_bench.py", .torch_script_in_bench_dir = false,
       .build = build_mobilenet_v2},
      {.name = "mobilenet_v2_b1", .description = "MobileNetV2 alpha 1.0 (torchvision mobilenet_v2), logits",
       .input = {224, 224, 3}, .batch = 1, .optimizer = "SGD 0.01, momentum 0.9", .classes = 1000,
       .mode = "infer", .torch_script = "torchvision_bench.py", .torch_script_in_bench_dir = false,
       .build = build_mobilenet_v2},
      {.name = "resnet50", .description = "ResNet50 (torchvision resnet50), logits", .input = {224, 224, 3},
       .batch = 16, .optimizer = "SGD 0.01, momentum 0.9", .classes = 1000, .mode = "train",
       .torch_script = "torchvision_bench.py", .torch_script_in_bench_dir = false, .build = build_resnet50},
      // The sequence workloads against nn.LSTM and nn.TransformerEncoder (sequence_bench.py).
      {.name = "lstm", .description = "LSTM 256 (sequences), LSTM 256, Dense 10 over 50 steps x 128 features",
       .input = {50, 128}, .batch = 64, .optimizer = "Adam 1e-3", .mode = "train",
       .torch_script = "sequence_bench.py", .torch_script_in_bench_dir = false, .build = build_lstm},
      {.name = "transformer",
       .description = "4 post-norm encoder layers (d_model 128, 4 heads, feed-forward 512), mean, Dense 10",
       .input = {128, 128}, .batch = 32, .optimizer = "Adam 1e-3", .mode = "train",
       .torch_script = "sequence_bench.py", .torch_script_in_bench_dir = false, .build = build_transformer},
  };
  return table;
}

const Workload& find_workload(const std::string& name) {
  std::string known, implemented;
  for (const Workload& w : workloads()) {
    known += (known.empty() ? "" : ", ") + w.name;
    if (w.build) implemented += (implemented.empty() ? "" : ", ") + w.name;
  }
  for (const Workload& w : workloads()) {
    if (w.name != name) continue;
    if (!w.build)
      throw std::invalid_argument("--workload: expected an implemented workload (" + implemented +
                                  "), got '" + name + "'. Its model is not built on our side yet.");
    return w;
  }
  throw std::invalid_argument("--workload: expected one of " + known + ", got '" + name + "'.");
}

int run_worker(const Workload& w, const TimingOptions& timing, const std::string& mode, k::Device device) {
  k::utils::set_random_seed(0);
  std::shared_ptr<k::Model> model = w.build();
  std::vector<Batch> pool = make_pool(w);
  const bool gpu = device.kind == k::DeviceKind::cuda;
  if (gpu) {
    model->to(device);
    for (Batch& b : pool) b = {b.x.to(device), b.y.to(device)};
  }
  auto sync = [&] {
    if (gpu) k::cuda::synchronize(device.index);
  };
  if (gpu) k::reset_peak_memory(device);

  nlohmann::json out = {{"side", "ours"}, {"workload", w.name}, {"batch", w.batch}, {"threads", k::num_threads()},
                        {"device", device.str()}, {"tf32", gpu && k::cuda::allow_tf32()}};
  if (mode != "infer")
    out["train"] = timed([&](const Batch& b) { model->train_on_batch(b.x, b.y); }, sync, pool, w.batch, timing);
  // Inference on the GPU is a call of the model (Keras's `model(x, training=False)`), whose outputs
  // stay on the device as torch_gpu.py's forward pass under inference_mode; predict_on_batch
  // would add a copy to the host and a wait each step. On the CPU the two are the same work.
  auto infer_step = [&](const Batch& b) {
    if (!gpu) return void(model->predict_on_batch(b.x));
    k::NoGradGuard no_grad;
    k::DeviceScope on_device(device);
    (*model)(k::TensorList{b.x}, k::CallArgs{.training = false});
  };
  if (mode != "train") {
    out["infer"] = timed(infer_step, sync, pool, w.batch, timing);
    out["infer_step"] = gpu ? "model call" : "predict_on_batch";
  }
  if (gpu) out["peak_gpu_mib"] = static_cast<double>(k::cuda::allocator_stats(device.index).peak_bytes_in_use) / (1 << 20);

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  out["peak_rss_mib"] = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  return 0;
}

int run_breakdown(const Workload& w, int steps, const std::string& mode, k::Device device) {
  k::utils::set_random_seed(0);
  std::shared_ptr<k::Model> model = w.build();
  std::vector<Batch> pool = make_pool(w);
  const bool gpu = device.kind == k::DeviceKind::cuda;
  if (gpu) {
    model->to(device);
    for (Batch& b : pool) b = {b.x.to(device), b.y.to(device)};
  }
  k::DeviceScope on_device(device);
  const bool training = mode != "infer";  // else only predict_on_batch is timed and profiled
  for (int i = 0; i < 5; ++i) {
    const Batch& b = pool[static_cast<size_t>(i) % pool.size()];
    if (training) model->train_on_batch(b.x, b.y);
    else model->predict_on_batch(b.x);
  }

  // Wall and process-CPU time of each phase; CPU above wall x threads means spinning threads.
  struct Phase {
    const char* name;
    double wall = 0, cpu = 0;
  };
  std::vector<Phase> phases = {{"forward"}, {"loss"}, {"backward"}, {"optimizer"}, {"metrics"}, {"train_on_batch"}, {"predict_on_batch"}};
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  // On a GPU each phase is waited for, so that its wall time is its work's; the op rows then hold
  // the host's time issuing each kernel (they run asynchronously).
  auto timed_phase = [&](size_t p, auto&& f) {
    auto w0 = Clock::now();
    double c0 = cpu_now();
    f();
    if (gpu) k::cuda::synchronize(device.index);
    phases[p].wall += seconds_since(w0);
    phases[p].cpu += cpu_now() - c0;
  };
  k::reset_op_profile();
  if (training) {
    // The phases of Model::train_step (keras/models/trainer.cpp), through the public API; the
    // kernels of these steps are timed per op (backend/op_profile.h).
    k::set_op_profiling(true);
    for (int s = 0; s < steps; ++s) {
      const Batch& b = pool[static_cast<size_t>(s) % pool.size()];
      std::vector<k::Variable> vars = model->trainable_weights();
      k::TensorList sources;
      for (const auto& v : vars) sources.push_back(v.value());
      k::Tensor y_pred, loss;
      k::TensorList grads;
      {
        k::GradientTape tape;
        timed_phase(0, [&] { y_pred = (*model)(b.x, k::CallArgs{.training = true}); });
        timed_phase(1, [&] {
          loss = (*model->loss())(b.y, y_pred);
          for (const auto& r : model->regularization_losses()) loss = k::ops::add(loss, r);
        });
        timed_phase(2, [&] { grads = tape.gradient(loss, sources); });
      }
      timed_phase(3, [&] { model->optimizer()->apply(grads, vars); });
      timed_phase(4, [&] {
        k::NoGradGuard no_grad;
        for (const auto& m : model->metrics()) m->update_state(b.y, y_pred.detach());
      });
    }
    k::set_op_profiling(false);
    for (int s = 0; s < steps; ++s) {
      const Batch& b = pool[static_cast<size_t>(s) % pool.size()];
      timed_phase(5, [&] { model->train_on_batch(b.x, b.y); });
    }
  }
  k::set_op_profiling(!training);
  for (int s = 0; s < steps; ++s) timed_phase(6, [&] { model->predict_on_batch(pool[static_cast<size_t>(s) % pool.size()].x); });
  k::set_op_profiling(false);

  std::printf("workload %s, batch %lld, %s, %d threads, %d steps: mean ms per step\n", w.name.c_str(),
              static_cast<long long>(w.batch), device.str().c_str(), k::num_threads(), steps);
  std::printf("%-18s %10s %10s\n", "phase", "wall ms", "cpu ms");
  for (const Phase& p : phases) {
    if (p.wall == 0) continue;
    if (std::string(p.name) == "train_on_batch") std::printf("%-18s %10s %10s\n", "--", "", "");
    std::printf("%-18s %10.3f %10.3f\n", p.name, 1e3 * p.wall / steps, 1e3 * p.cpu / steps);
  }
  // Per-op kernel wall time of the profiled steps, most first.
  std::vector<k::OpProfileEntry> ops = k::op_profile();
  double total = 0;
  for (const auto& e : ops) total += e.seconds;
  std::printf("\nkernels of the %s: %.3f ms (%s) per step in all; per step:\n",
              training ? "phased steps (forward to metrics)" : "predict_on_batch calls", 1e3 * total / steps,
              gpu ? "the host's time issuing them" : "wall");
  std::printf("%-28s %-22s %7s %10s %10s %7s\n", "op", "first input", "calls", "wall ms", "cpu ms", "share");
  k::OpProfileEntry rest{.op = "(smaller rows)"};
  int64_t hidden = 0;
  for (const auto& e : ops) {
    if (e.seconds < 0.002 * total) {
      rest.calls += e.calls, rest.seconds += e.seconds, rest.cpu_seconds += e.cpu_seconds, ++hidden;
      continue;
    }
    std::printf("%-28s %-22s %7.1f %10.3f %10.3f %6.1f%%\n", e.op.c_str(), e.shape.c_str(),
                static_cast<double>(e.calls) / steps, 1e3 * e.seconds / steps, 1e3 * e.cpu_seconds / steps,
                100 * e.seconds / total);
  }
  if (hidden > 0)
    std::printf("%-28s %-22s %7.1f %10.3f %10.3f %6.1f%%\n", rest.op.c_str(),
                (std::to_string(hidden) + " rows").c_str(),
                static_cast<double>(rest.calls) / steps, 1e3 * rest.seconds / steps, 1e3 * rest.cpu_seconds / steps,
                100 * rest.seconds / total);
  return 0;
}

}  // namespace bench
