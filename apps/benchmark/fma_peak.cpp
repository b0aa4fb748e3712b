// The machine's attainable FP32 FMA throughput, measured in-process: the ceiling the train
// GFLOP/s are compared against. Independent accumulator chains (more than latency x ports) make
// the loop bound by FMA issue alone; the kernels carry target attributes and are picked at run
// time, so the default build needs no -march flag.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <latch>
#include <thread>
#include <vector>

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

// Wall seconds for `threads` threads, released together, each running `iterations`.
double run_threads(Kernel kernel, int threads, long iterations, float& sink) {
  std::vector<float> results(static_cast<size_t>(threads));
  std::latch start(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      results[static_cast<size_t>(t)] = kernel(iterations, 0.5f + static_cast<float>(t));
    });
  start.arrive_and_wait();
  auto t0 = std::chrono::steady_clock::now();
  for (auto& th : pool) th.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (float r : results) sink += r;
  return elapsed;
}

}  // namespace

double measure_fma_peak_gflops(int threads, double seconds, std::string& isa) {
  __builtin_cpu_init();
  Kernel kernel = nullptr;
  double flops_per_iteration = 0;  // chains x lanes x 2
  if (__builtin_cpu_supports("avx512f")) {
    kernel = fma_chains_avx512, flops_per_iteration = kChains512 * 16 * 2.0, isa = "avx512";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    kernel = fma_chains_avx2, flops_per_iteration = kChains256 * 8 * 2.0, isa = "avx2";
  } else {
    isa = "none";
    return 0;
  }
  float sink = 0;
  long iterations = 1 << 14;
  while (run_threads(kernel, 1, iterations, sink) < 0.02) iterations *= 2;
  iterations = static_cast<long>(static_cast<double>(iterations) * seconds /
                                 std::max(run_threads(kernel, 1, iterations, sink), 1e-4));
  // The best of a few runs is the one least disturbed by other processes on a shared machine.
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double s = run_threads(kernel, threads, iterations, sink);
    best = std::max(best, flops_per_iteration * static_cast<double>(iterations) * threads / s / 1e9);
  }
  // Keeps the chains observable so the compiler cannot drop them.
  if (sink == 12345.678f) std::fprintf(stderr, "(checksum)\n");
  return best;
}

}  // namespace bench
