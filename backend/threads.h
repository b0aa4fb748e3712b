// Thread count for CPU kernels (oneDNN and plain loops share one OpenMP pool). Defaults to one
// thread per core; the environment variable KERAS_NUM_THREADS overrides it at start-up.
#pragma once

namespace keras {
int num_threads();
// Throws ValueError for n < 1.
void set_num_threads(int n);
}  // namespace keras
