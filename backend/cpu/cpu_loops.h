// Two helpers of the CPU's plain-loop kernels: KERAS_ISA_CLONES compiles a function for AVX-512,
// AVX2 and the baseline ISA, the loader picking the CPU's (GCC/Clang function multiversioning);
// parallel_spans splits [0, n) into one contiguous span per OpenMP thread.
#pragma once
#include <cstdint>

#include <omp.h>

#define KERAS_ISA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace keras::cpu {

// f(begin, end) for one span per thread of the team; one span on the calling thread when n is at
// most `serial_below` (a team costs more than small work).
template <class F>
void parallel_spans(int64_t n, int64_t serial_below, F&& f) {
#pragma omp parallel if (n > serial_below)
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    f(n * id / nt, n * (id + 1) / nt);
  }
}

}  // namespace keras::cpu
