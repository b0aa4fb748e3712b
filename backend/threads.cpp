#include "backend/threads.h"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "backend/errors.h"
#include "backend/omp_wait_policy.h"

namespace keras {
namespace {
// KERAS_NUM_THREADS, else OMP_NUM_THREADS (its first level, as libgomp reads "4,2"), else the
// cores this process may run on. Setting the team here overrides libgomp's own reading of
// OMP_NUM_THREADS, so honouring it is on us: several processes sharing a machine (test runs, data
// parallel ranks) would otherwise each spin one thread per core of the whole machine.
int initial_threads() {
  return threads_from_environment(std::getenv("KERAS_NUM_THREADS"), std::getenv("OMP_NUM_THREADS"), available_cores());
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

int threads_from_environment(const char* keras_num_threads, const char* omp_num_threads, int cores) {
  for (const char* env : {keras_num_threads, omp_num_threads}) {
    if (env == nullptr) continue;
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(env, &end, 10);
    if (end != env && (*end == '\0' || *end == ',') && errno == 0 && n >= 1 && n <= 4096) return static_cast<int>(n);
  }
  return std::max(cores, 1);
}

int num_threads() { return thread_count(); }

void set_num_threads(int n) {
  if (n < 1) fail<ValueError>("set_num_threads", "n >= 1", std::to_string(n));
  thread_count() = n;
  omp_set_num_threads(n);
}

}  // namespace keras
