// How far apart the process's first two CPUs are, as the time a cache line takes to go from one to
// the other and back. On a VM the host may move the two vCPUs between one core complex (CCD) and
// two: on the Zen 4 machines here the round trip jumped between ~60-80 ns and ~320-390 ns every
// few tens of seconds, and with it the mlp's training ran ~54K or ~37K samples/s (PyTorch ~31K or
// ~25K). A benchmark round is only comparable with rounds of the same distance.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

#include "bench.h"

namespace bench {
namespace {

// Where pinning fails the probe still runs, on whichever CPUs the scheduler gives it.
void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Mean round trip of up to `trips` hand-offs of one cache line between threads pinned to cpus a
// and b, stopping after about 20 ms: on a busy machine a hand-off can wait for a time slice.
double ping_pong_ns(int a, int b, int trips) {
  constexpr int kStop = -1;
  alignas(64) std::atomic<int> turn{0};  // odd: the partner's move, even: ours
  std::thread partner([&] {
    pin_to(b);
    for (;;) {
      int t;
      while ((t = turn.load(std::memory_order_acquire)) % 2 == 0) {
      }
      if (t == kStop) return;
      turn.store(t + 1, std::memory_order_release);
    }
  });
  pin_to(a);
  // Hand-off 0 is untimed: it waits for the partner thread to start.
  auto hand_off = [&](int i) {
    turn.store(2 * i + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  };
  hand_off(0);
  const auto start = std::chrono::steady_clock::now();
  int done = 0;
  while (done < trips) {
    hand_off(++done);
    if (done % 16 == 0 && std::chrono::steady_clock::now() - start > std::chrono::milliseconds(20)) break;
  }
  const auto stop = std::chrono::steady_clock::now();
  turn.store(kStop, std::memory_order_release);
  partner.join();
  return std::chrono::duration<double, std::nano>(stop - start).count() / done;
}

}  // namespace

double measure_core_roundtrip_ns() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return std::numeric_limits<double>::quiet_NaN();
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  double best = std::numeric_limits<double>::infinity();
  // A separate thread does the pinning so that the caller's own affinity is left alone; the best
  // of three short runs drops one that a timer interrupt or another process disturbed.
  std::thread probe([&] {
    for (int run = 0; run < 3; ++run) best = std::min(best, ping_pong_ns(cpus[0], cpus[1], 5000));
  });
  probe.join();
  return best;
}

}  // namespace bench
