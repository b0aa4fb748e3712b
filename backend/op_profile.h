// Per-op kernel timing, for benchmarks and profiling (off by default; costs one relaxed atomic
// load per op when off). While on, run_op adds the wall time of every kernel call to an entry
// keyed by op name and the shape of its first input, so that layers of one kind stay apart.
// Only the kernel is timed: shape inference, allocation and taping are not. On a shared machine
// the CPU time is the steadier figure (waiting for a core counts in wall time only).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace keras {

struct OpProfileEntry {
  std::string op;     // op name
  std::string shape;  // first input's shape, "()" for no input
  uint64_t calls = 0;
  double seconds = 0;      // summed wall time of the kernel calls
  double cpu_seconds = 0;  // summed process CPU time (all threads) over those calls
};

void set_op_profiling(bool on);
bool op_profiling();
// Entries so far, most time first.
std::vector<OpProfileEntry> op_profile();
void reset_op_profile();

namespace detail {
// Called by run_op while profiling is on.
void record_op_time(const std::string& op, const std::string& shape, double seconds, double cpu_seconds);
}  // namespace detail

}  // namespace keras
