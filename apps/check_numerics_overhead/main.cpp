// check_numerics_overhead: what check-numerics costs on the benchmark's `cnn` workload (the
// Conv-Conv-Pool-Dense model of apps/benchmark, batch 128, Adam), measured in one process so that
// a busy machine's drift hits every configuration alike: blocks of train_on_batch steps alternate
// between check-numerics off, on, on with the fused Dense/Conv2D activations kept (the check
// alone), and an observer that does nothing (the instrumentation hooks alone). Prints the median
// wall and process-CPU milliseconds per step of each and their ratios to "off".
//
//   build/apps/check_numerics_overhead [--blocks N] [--steps N]      (defaults 12 and 4)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <keras/keras.h>

namespace k = keras;

namespace {

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}
double wall_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Nothing : k::instrumentation::Observer {};

}  // namespace

int main(int argc, char** argv) {
  int blocks = 12, steps = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--blocks") blocks = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--steps") steps = std::max(1, std::atoi(argv[i + 1]));
  }
  k::utils::set_random_seed(1);
  k::Sequential model({k::layers::Input({28, 28, 1}),
                       k::layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}),
                       k::layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}),
                       k::layers::MaxPooling2D({.pool_size = 2}), k::layers::Flatten(),
                       k::layers::Dense({.units = 128, .activation = "relu"}), k::layers::Dense({.units = 10})});
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = k::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const k::Tensor x = k::random::uniform({128, 28, 28, 1}, 0.0, 1.0, uint64_t{5});
  std::vector<int64_t> labels(128);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  const k::Tensor y = k::Tensor::from_vector(labels, {128});
  for (int i = 0; i < 5; ++i) model.train_on_batch(x, y);

  const char* names[] = {"off", "on", "on, fused activations kept", "an observer doing nothing"};
  constexpr int kConfigs = 4;
  auto nothing = std::make_shared<Nothing>();
  std::vector<double> wall[kConfigs], cpu[kConfigs];
  for (int b = 0; b < blocks; ++b)
    for (int c = 0; c < kConfigs; ++c) {
      k::debugging::disable_check_numerics();
      k::instrumentation::detach(nothing.get());
      if (c == 1 || c == 2) k::debugging::enable_check_numerics();
      if (c == 2) k::instrumentation::set_split_fused_activations(false);
      if (c == 3) k::instrumentation::attach(nothing);
      model.train_on_batch(x, y);  // the first step after a switch is not timed
      const double w0 = wall_ms(), c0 = cpu_ms();
      for (int s = 0; s < steps; ++s) model.train_on_batch(x, y);
      wall[c].push_back((wall_ms() - w0) / steps);
      cpu[c].push_back((cpu_ms() - c0) / steps);
    }
  k::debugging::disable_check_numerics();
  k::instrumentation::detach(nothing.get());
  std::printf("cnn train_on_batch, batch 128, %d threads: median of %d blocks x %d steps, ms per step\n",
              k::num_threads(), blocks, steps);
  for (int c = 0; c < kConfigs; ++c)
    std::printf("%-28s wall %8.2f  cpu %8.2f   / off: wall %.3f  cpu %.3f\n", names[c], median(wall[c]),
                median(cpu[c]), median(wall[c]) / median(wall[0]), median(cpu[c]) / median(cpu[0]));
}
