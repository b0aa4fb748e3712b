// The threads of this process, read from /proc, for tests that check that pipeline stages join
// the threads they start and run them at the priority they claim.
#pragma once
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace keras::testing {

inline int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Threads exit asynchronously after join only for helpers (OpenMP pools); give them a moment.
inline bool back_to(int baseline) {
  for (int i = 0; i < 200 && thread_count() > baseline; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return thread_count() <= baseline;
}

// How many threads run under scheduling `policy` (SCHED_OTHER, SCHED_IDLE, ...): field 41 of
// /proc/<pid>/task/<tid>/stat, counted after the parenthesized command name.
inline int threads_with_policy(int policy) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 41 && fields >> field; ++i)
      if (i == 41 && std::stoi(field) == policy) ++n;
  }
  return n;
}

}  // namespace keras::testing
