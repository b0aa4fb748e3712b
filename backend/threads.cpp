#include "backend/threads.h"

#include <omp.h>

#include <cstdlib>
#include <thread>

#include "backend/errors.h"

namespace keras {
namespace {
int initial_threads() {
  if (const char* env = std::getenv("KERAS_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

int& thread_count() {
  static int n = [] {
    int v = initial_threads();
    omp_set_num_threads(v);
    return v;
  }();
  return n;
}
// Applies the setting when the library loads, before any kernel runs.
const int applied_at_load = thread_count();
}  // namespace

int num_threads() { return thread_count(); }

void set_num_threads(int n) {
  if (n < 1) fail<ValueError>("set_num_threads", "n >= 1", std::to_string(n));
  thread_count() = n;
  omp_set_num_threads(n);
}

}  // namespace keras
