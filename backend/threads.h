// Thread count for CPU kernels (oneDNN and plain loops share one OpenMP pool). Defaults to one
// thread per core this process may use (its CPU affinity); at start-up the environment variable
// KERAS_NUM_THREADS, else OMP_NUM_THREADS, overrides it.
#pragma once

namespace keras {
int num_threads();
// The start-up rule above: the first of the two variables that holds a count from 1 to 4096
// (optionally followed by libgomp's nested-level list: "4,2" gives 4; anything else, "2abc"
// included, is ignored as libgomp ignores it), else `cores` (at least 1). Null means unset.
int threads_from_environment(const char* keras_num_threads, const char* omp_num_threads, int cores);
// Throws ValueError for n < 1.
void set_num_threads(int n);
}  // namespace keras
