// Data-parallel training throughput on the `cnn` workload (Conv 32, Conv 64, MaxPool, Dense 128,
// Dense 10 on 28x28x1, global batch 128, Adam): one process with 2 threads against 2 processes
// with 1 thread each (mpirun), in alternating rounds, plus the share of each distributed step
// spent waiting for gradient allreduces and the cost of one allreduce of the gradients.
//
//   build/apps/data_parallel_benchmark [--rounds 3] [--steps 40] [--np 2]
//   mpirun -np 2 build/apps/data_parallel_benchmark --worker    (one measurement; JSON on process 0)
#include <keras/keras.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace k = keras;
namespace dist = keras::distribution;

namespace {

constexpr int64_t kBatch = 128;

std::unique_ptr<k::Sequential> cnn() {
  return std::unique_ptr<k::Sequential>(new k::Sequential({
      k::layers::Input({28, 28, 1}),
      k::layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}),
      k::layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}),
      k::layers::MaxPooling2D({.pool_size = 2}),
      k::layers::Flatten(),
      k::layers::Dense({.units = 128, .activation = "relu"}),
      k::layers::Dense({.units = 10, .activation = "softmax"}),
  }));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One measurement in this process (or this mpirun job): `steps` timed training steps after one
// untimed epoch of warm-up. Prints a JSON line on process 0.
int worker(int64_t steps) {
  dist::set_distribution(dist::DataParallel());
  auto& comm = dist::distribution()->communicator();
  k::set_random_seed(1);
  k::Tensor x = k::random::uniform({kBatch * steps, 28, 28, 1}, 0, 1, 2);
  std::vector<int64_t> labels(static_cast<size_t>(kBatch * steps));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  k::Tensor y = k::Tensor::from_vector(labels);
  auto model = cnn();
  model->compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}), .loss = "sparse_categorical_crossentropy"});
  model->fit(x, y, {.batch_size = kBatch, .epochs = 1, .verbose = 0, .shuffle = false, .steps_per_epoch = 5});
  dist::reset_reduction_stats();
  comm.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  model->fit(x, y, {.batch_size = kBatch, .epochs = 1, .verbose = 0, .shuffle = false});
  comm.barrier();
  const double elapsed = seconds_since(t0);
  const dist::ReductionStats stats = dist::reduction_stats();

  // One blocking allreduce of the gradients' size, alone (no compute beside it).
  int64_t grad_elements = 0;
  for (const auto& v : model->trainable_weights()) grad_elements += v.value().numel();
  std::vector<float> buffer(static_cast<size_t>(grad_elements), 1.0f);
  double allreduce_ms = 1e9;
  for (int i = 0; i < 5; ++i) {
    comm.barrier();
    const auto a0 = std::chrono::steady_clock::now();
    comm.allreduce(buffer.data(), buffer.size(), k::collectives::ElementType::float32, k::collectives::ReduceOp::sum);
    allreduce_ms = std::min(allreduce_ms, 1e3 * seconds_since(a0));
  }
  if (comm.rank() == 0)
    std::printf(
        "{\"processes\": %d, \"threads\": %d, \"samples_per_s\": %.2f, \"steps\": %lld, \"wait_share\": %.4f, "
        "\"wait_ms_per_step\": %.3f, \"buckets_per_step\": %.2f, \"gradient_mib\": %.3f, \"allreduce_ms\": %.3f}\n",
        comm.size(), k::num_threads(), static_cast<double>(kBatch * steps) / elapsed, static_cast<long long>(steps),
        stats.steps ? stats.wait_seconds / elapsed : 0.0, stats.steps ? 1e3 * stats.wait_seconds / static_cast<double>(stats.steps) : 0.0,
        stats.steps ? static_cast<double>(stats.buckets) / static_cast<double>(stats.steps) : 0.0,
        static_cast<double>(grad_elements) * 4 / (1 << 20), allreduce_ms);
  return 0;
}

// Runs `command` and returns the value of "samples_per_s" in its last JSON line (0 on failure).
double run_round(const std::string& command, std::string& line) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) return 0;
  char buf[4096];
  line.clear();
  while (std::fgets(buf, sizeof buf, p))
    if (buf[0] == '{') line = buf;
  const int status = pclose(p);
  if (status != 0 || line.empty()) return 0;
  const auto at = line.find("\"samples_per_s\": ");
  return at == std::string::npos ? 0 : std::atof(line.c_str() + at + 17);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3, np = 2;
  int64_t steps = 40;
  bool as_worker = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "data_parallel_benchmark: expected a value after %s, got none\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--worker") as_worker = true;
    else if (a == "--rounds") rounds = std::atoi(value());
    else if (a == "--steps") steps = std::atoll(value());
    else if (a == "--np") np = std::atoi(value());
    else {
      std::fprintf(stderr, "data_parallel_benchmark: expected --worker, --rounds N, --steps N or --np N, got '%s'\n", a.c_str());
      return 2;
    }
  }
  if (as_worker) return worker(steps);
  if (!k::collectives::built_with_mpi()) {
    std::fprintf(stderr, "data_parallel_benchmark: this build has no MPI (install libopenmpi-dev and rebuild)\n");
    return 1;
  }
  const std::string self = argv[0], args = " --worker --steps " + std::to_string(steps);
  const std::string single = "KERAS_NUM_THREADS=2 " + self + args;
  const std::string multi = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np " +
                            std::to_string(np) + " -x KERAS_NUM_THREADS=1 " + self + args;
  std::printf("cnn workload, global batch %lld, %lld timed steps; 1 process x 2 threads vs %d processes x 1 thread\n",
              static_cast<long long>(kBatch), static_cast<long long>(steps), np);
  std::vector<double> ones, multis;
  for (int r = 0; r < rounds; ++r) {
    std::string line;
    ones.push_back(run_round(single, line));
    std::printf("round %d  1 process : %s", r, line.empty() ? "failed\n" : line.c_str());
    multis.push_back(run_round(multi, line));
    std::printf("round %d  %d processes: %s", r, np, line.empty() ? "failed\n" : line.c_str());
    std::fflush(stdout);
  }
  const double a = median(ones), b = median(multis);
  std::printf("median samples/s: 1 process %.1f, %d processes %.1f, ratio %.3f\n", a, np, b, a > 0 ? b / a : 0.0);
  return 0;
}
