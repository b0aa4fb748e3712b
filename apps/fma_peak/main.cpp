// fma_peak: the machine's attainable FP32 multiply-add throughput, the ceiling that every
// GEMM, convolution and benchmark of this project is measured against.
//
// Each thread runs many independent accumulator chains acc = acc * m + a with vector FMAs.
// Independent chains hide the FMA latency (4 cycles, 2 ports on recent cores => at least 8 in
// flight), so the loop is bound by FMA issue rate alone. The kernels carry target attributes and
// are chosen at run time, so the default build needs no -march flag.
//
// Usage: fma_peak [seconds per measurement, default 0.3]
// Threads: 1 and keras::num_threads() (KERAS_NUM_THREADS, default one per core).
// Output: a table, then one JSON line for scripts.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "backend/threads.h"

namespace {

// 16 zmm chains: 32 architectural zmm registers leave room for the two constants.
constexpr int kChains512 = 16;
// 12 ymm chains: 16 ymm registers, minus the two constants, minus slack for the compiler.
constexpr int kChains256 = 12;

__attribute__((target("avx512f"), noinline)) float chains_avx512(long iterations, float seed) {
  __m512 acc[kChains512];
  for (int k = 0; k < kChains512; ++k) acc[k] = _mm512_set1_ps(seed + 0.01f * k);
  // Contracting toward 1.0 keeps every value normal (denormals would slow the FMAs down).
  const __m512 m = _mm512_set1_ps(0.9999f), a = _mm512_set1_ps(0.0001f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int k = 0; k < kChains512; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
  }
  for (int k = 1; k < kChains512; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc[0]);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

__attribute__((target("avx2,fma"), noinline)) float chains_avx2(long iterations, float seed) {
  __m256 acc[kChains256];
  for (int k = 0; k < kChains256; ++k) acc[k] = _mm256_set1_ps(seed + 0.01f * k);
  const __m256 m = _mm256_set1_ps(0.9999f), a = _mm256_set1_ps(0.0001f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains256; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, a);
  }
  for (int k = 1; k < kChains256; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

struct Isa {
  const char* name;
  float (*kernel)(long, float);
  double flops_per_iteration;  // chains * lanes * 2 (a multiply and an add per lane)
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `iterations` on each of `threads` threads, released together; returns wall seconds.
double timed_run(const Isa& isa, int threads, long iterations, float& sink) {
  std::vector<float> results(threads);
  std::latch start(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      results[t] = isa.kernel(iterations, 0.5f + t);
    });
  }
  start.arrive_and_wait();
  auto t0 = std::chrono::steady_clock::now();
  for (auto& th : pool) th.join();
  double elapsed = seconds_since(t0);
  for (float r : results) sink += r;
  return elapsed;
}

// Best GFLOP/s over a few runs of about `seconds` each (the best run is the least disturbed
// by other processes on a shared machine).
double measure(const Isa& isa, int threads, double seconds, float& sink) {
  long iterations = 1 << 16;
  while (timed_run(isa, 1, iterations, sink) < 0.05) iterations *= 2;  // calibrate, single thread
  iterations = static_cast<long>(iterations * seconds / std::max(timed_run(isa, 1, iterations, sink), 1e-3));
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double s = timed_run(isa, threads, iterations, sink);
    best = std::max(best, isa.flops_per_iteration * iterations * threads / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.3;
  if (!(seconds > 0)) {
    std::fprintf(stderr, "fma_peak: expected a positive number of seconds, got '%s'\n", argv[1]);
    return 2;
  }
  __builtin_cpu_init();
  std::vector<Isa> isas;
  if (__builtin_cpu_supports("avx512f")) isas.push_back({"avx512", chains_avx512, kChains512 * 16 * 2.0});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    isas.push_back({"avx2", chains_avx2, kChains256 * 8 * 2.0});
  }
  if (isas.empty()) {
    std::fprintf(stderr, "fma_peak: expected a CPU with AVX2+FMA or AVX-512F, got neither\n");
    return 1;
  }

  const int n = keras::num_threads();
  std::vector<int> thread_counts = {1};
  if (n > 1) thread_counts.push_back(n);

  float sink = 0;
  std::string json = "{";
  std::printf("%-8s %8s %12s %14s\n", "isa", "threads", "GFLOP/s", "GFLOP/s/thread");
  for (const Isa& isa : isas) {
    for (int threads : thread_counts) {
      double gflops = measure(isa, threads, seconds, sink);
      std::printf("%-8s %8d %12.1f %14.1f\n", isa.name, threads, gflops, gflops / threads);
      char entry[96];
      std::snprintf(entry, sizeof entry, "%s\"%s_%dt_gflops\": %.1f", json.size() > 1 ? ", " : "", isa.name,
                    threads, gflops);
      json += entry;
    }
  }
  json += "}";
  std::printf("%s\n", json.c_str());
  // Printing the sum keeps the compiler from discarding the chains.
  std::fprintf(stderr, "(checksum %g)\n", static_cast<double>(sink));
  return 0;
}
