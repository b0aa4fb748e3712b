// The hidden `--profile-overhead ROUNDS` mode: what keras::profiler costs a training epoch. Each
// round fits one epoch of `steps` batches with the profiler off, then the same epoch with it
// recording (start before fit, stop after), alternating so both see the same machine state; the
// trace's writing (stop) is timed apart, since it happens once per profile, not per step. On a
// busy machine the epoch ratio is noisy; the cost of recording one op, measured on a tiny op
// whose kernel is nearly free, times the events per epoch, bounds the overhead more steadily.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench.h"

namespace k = keras;

namespace bench {
namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Nanoseconds per call of a tiny op (a 4-element add: the kernel is nearly free, so what remains
// is the framework's per-op path) with the profiler off and on: the fastest of 7 alternated
// repeats of `n` calls each.
std::pair<double, double> ns_per_small_op(int n, const std::filesystem::path& logdir) {
  const k::Tensor a = k::Tensor::ones({4}), b = k::Tensor::ones({4});
  auto calls = [&] {
    for (int i = 0; i < n; ++i) k::ops::add(a, b);
  };
  double off = 1e30, on = 1e30;
  for (int r = 0; r < 7; ++r) {
    off = std::min(off, seconds_of(calls));
    k::profiler::start(logdir.string());
    on = std::min(on, seconds_of(calls));
    k::profiler::stop();
  }
  return {1e9 * off / n, 1e9 * on / n};
}

}  // namespace

int run_profile_overhead(const Workload& w, int rounds, int steps) {
  k::utils::set_random_seed(0);
  std::shared_ptr<k::Model> model = w.build();
  k::Generator gen(1234);
  k::Shape shape{w.batch * steps};
  shape.insert(shape.end(), w.input.begin(), w.input.end());
  k::Tensor x = k::random::normal(shape, 0.0, 1.0, gen);
  k::Tensor u = k::random::uniform({w.batch * steps}, 0.0, static_cast<double>(w.classes), gen);
  std::vector<int32_t> labels(static_cast<size_t>(w.batch * steps));
  for (size_t j = 0; j < labels.size(); ++j)
    labels[j] = std::min(static_cast<int>(w.classes) - 1, static_cast<int>(u.data<float>()[j]));
  k::Tensor y = k::Tensor::from_vector(labels, {w.batch * steps});
  const k::FitOptions fit = {.batch_size = w.batch, .epochs = 1, .verbose = 0, .shuffle = false};
  model->fit(x, y, fit);  // warm-up: primitive caches, allocator cache

  const std::filesystem::path logdir =
      std::filesystem::temp_directory_path() / ("keras_profile_overhead_" + std::to_string(getpid()));
  std::vector<double> off, on, write;
  size_t events = 0;
  uintmax_t file_bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    off.push_back(seconds_of([&] { model->fit(x, y, fit); }));
    k::profiler::start(logdir.string());
    on.push_back(seconds_of([&] { model->fit(x, y, fit); }));
    std::string file;
    write.push_back(seconds_of([&] { file = k::profiler::stop(); }));
    events = k::profiler::last_trace().events.size();
    file_bytes = std::filesystem::file_size(file);
  }
  if (rounds > 0) {
    std::printf("%s", k::profiler::summary(12).c_str());
  }
  // The recording cost of one op, apart from any kernel time (steadier than the epoch ratio on
  // a busy machine): a tiny op with the profiler off, then on.
  const auto [op_off, op_on] = ns_per_small_op(20000, logdir);
  std::filesystem::remove_all(logdir);
  const double m_off = median(off), m_on = median(on);
  nlohmann::json out = {{"workload", w.name},
                        {"batch", w.batch},
                        {"steps_per_epoch", steps},
                        {"rounds", rounds},
                        {"threads", k::num_threads()},
                        {"epoch_s_off_median", m_off},
                        {"epoch_s_on_median", m_on},
                        {"samples_per_s_off", static_cast<double>(w.batch * steps) / m_off},
                        {"samples_per_s_on", static_cast<double>(w.batch * steps) / m_on},
                        {"overhead_ratio", m_on / m_off},
                        {"events_per_epoch", events},
                        {"small_op_ns_off", op_off},
                        {"small_op_ns_on", op_on},
                        {"recording_ns_per_op", op_on - op_off},
                        {"recording_share_of_epoch", 1e-9 * (op_on - op_off) * static_cast<double>(events) / m_off},
                        {"stop_write_s_median", median(write)},
                        {"trace_bytes_gz", file_bytes},
                        {"epoch_s_off", off},
                        {"epoch_s_on", on}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace bench
