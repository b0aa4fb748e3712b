// KERAS_CUDA_CONV_HOST_TIMES=1: the host's time in each stage of the GPU convolutions
// (backend/cuda/conv_ops.cpp), summed over calls and threads, printed to stderr at exit with
// the whole kernels' time and what the stages leave unexplained. Issuing a ResNet50 convolution
// cost the host 120-160 us on an H200 (2026-11-27), far above a kernel launch; this says where.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace keras::cuda::conv_host_times {

enum class Stage : int { problem, prepare, key, describe, lookup, workspace, execute, epilogue, total, count };

struct Times {
  const bool on = [] {
    const char* v = std::getenv("KERAS_CUDA_CONV_HOST_TIMES");
    return v != nullptr && std::string(v) == "1";
  }();
  std::atomic<int64_t> ns[static_cast<int>(Stage::count)] = {};
  std::atomic<int64_t> calls[static_cast<int>(Stage::count)] = {};

  void print() const {
    static const char* names[] = {"problem (attributes, plan)", "prepare (pad, KRSC gather)", "algorithm key",
                                  "descriptors (create, set)",  "cache lookup",               "workspace",
                                  "cudnn call",                 "epilogue (bias, act, crop)", "whole kernels"};
    int64_t staged = 0;
    for (int i = 0; i < static_cast<int>(Stage::count); ++i) {
      const int64_t n = calls[i].load();
      if (n == 0) continue;
      if (i != static_cast<int>(Stage::total)) staged += ns[i].load();
      std::fprintf(stderr, "conv host time: %-28s %9lld calls %9.1f us/call %9.1f ms in all\n", names[i],
                   static_cast<long long>(n), 1e-3 * static_cast<double>(ns[i].load()) / static_cast<double>(n),
                   1e-6 * static_cast<double>(ns[i].load()));
    }
    std::fprintf(stderr, "conv host time: %-28s %29s %9.1f ms in all\n", "outside the stages", "",
                 1e-6 * static_cast<double>(ns[static_cast<int>(Stage::total)].load() - staged));
  }
};

inline Times& times() {
  static Times* t = [] {
    auto* made = new Times;  // never destroyed: kernels may run during exit
    if (made->on) std::atexit([] { times().print(); });
    return made;
  }();
  return *t;
}

// Adds the enclosing scope's time to `stage` when the diagnosis is on.
class Timer {
 public:
  explicit Timer(Stage stage) : stage_(stage), on_(times().on) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~Timer() {
    if (!on_) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
    times().ns[static_cast<int>(stage_)] += ns.count();
    ++times().calls[static_cast<int>(stage_)];
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

 private:
  Stage stage_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace keras::cuda::conv_host_times
