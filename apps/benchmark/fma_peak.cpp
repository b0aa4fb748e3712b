// The machine's attainable FP32 FMA throughput, measured in-process: the ceiling the train
// GFLOP/s are compared against. Independent accumulator chains (more than latency x ports) make
// the loop bound by FMA issue alone; the kernels carry target attributes and are picked at run
// time, so the default build needs no -march flag.
#include <immintrin.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <latch>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "bench.h"

namespace bench {
namespace {

constexpr int kChains512 = 16;  // of 32 zmm registers, leaving room for the constants
constexpr int kChains256 = 12;  // of 16 ymm registers

__attribute__((target("avx512f"), noinline)) float fma_chains_avx512(long iterations, float seed) {
  __m512 acc[kChains512];
  for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_set1_ps(seed + 0.01f * c);
  // Contracting toward 1 keeps the values normal (denormals would slow the FMAs).
  const __m512 m = _mm512_set1_ps(0.9999f), a = _mm512_set1_ps(0.0001f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  }
  for (int c = 1; c < kChains512; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2,fma"), noinline)) float fma_chains_avx2(long iterations, float seed) {
  __m256 acc[kChains256];
  for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_set1_ps(seed + 0.01f * c);
  const __m256 m = _mm256_set1_ps(0.9999f), a = _mm256_set1_ps(0.0001f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  }
  for (int c = 1; c < kChains256; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

using Kernel = float (*)(long, float);

// CPU seconds of the calling thread: unlike wall time, it does not count the time the thread
// sat descheduled, so a busy machine does not make the peak look lower than the cores are.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs `iterations` on each of `threads` threads, released together; returns the sum over the
// threads of iterations per CPU second of that thread.
double run_threads(Kernel kernel, int threads, long iterations, float& sink) {
  std::vector<float> results(static_cast<size_t>(threads));
  std::vector<double> rates(static_cast<size_t>(threads));
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      double c0 = thread_cpu_seconds();
      results[static_cast<size_t>(t)] = kernel(iterations, 0.5f + static_cast<float>(t));
      rates[static_cast<size_t>(t)] = static_cast<double>(iterations) / std::max(thread_cpu_seconds() - c0, 1e-9);
    });
  for (auto& th : pool) th.join();
  double total = 0;
  for (size_t t = 0; t < results.size(); ++t) sink += results[t], total += rates[t];
  return total;
}

}  // namespace

double measure_fma_peak_gflops(int threads, double seconds, std::string& isa) {
  __builtin_cpu_init();
  Kernel kernel = nullptr;
  double flops_per_iteration = 0;  // chains x lanes x 2
  // The ISA our kernels may use (capped by ONEDNN_MAX_CPU_ISA), so that a capped run reports the
  // peak its kernels can reach.
  if (keras::cpu::isa_allows_avx512()) {
    kernel = fma_chains_avx512, flops_per_iteration = kChains512 * 16 * 2.0, isa = "avx512";
  } else if (keras::cpu::isa_allows_avx2()) {
    kernel = fma_chains_avx2, flops_per_iteration = kChains256 * 8 * 2.0, isa = "avx2";
  } else {
    isa = "none";
    return 0;
  }
  float sink = 0;
  // Iterations for about `seconds` of CPU per thread, from a short single-thread probe.
  const long probe = 1 << 16;
  long iterations = std::max(probe, static_cast<long>(seconds * run_threads(kernel, 1, probe, sink)));
  // The best of a few runs is the one least disturbed (SMT siblings, frequency dips).
  double best = 0;
  for (int rep = 0; rep < 5; ++rep)
    best = std::max(best, flops_per_iteration * run_threads(kernel, threads, iterations, sink) / 1e9);
  // Keeps the chains observable so the compiler cannot drop them.
  if (sink == 12345.678f) std::fprintf(stderr, "(checksum)\n");
  return best;
}

}  // namespace bench
