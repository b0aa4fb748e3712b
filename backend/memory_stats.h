// Byte statistics of the caching allocators, per device: what tensors hold now, the most they
// have held, what the cache keeps. Read by keras::debugging::memory_info and by the profiler's
// per-step memory counters. Counting costs a few integer updates under the allocator's existing
// lock, so it is always on.
//
// Figures are in the allocator's block sizes (the CPU allocator rounds every request up to 64
// bytes, the CUDA one to its size classes), so they are what the process really holds.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/device.h"

namespace keras {

struct MemoryStats {
  size_t current_bytes = 0;      // held by live tensors now
  size_t peak_bytes = 0;         // the most current_bytes has been since start or reset_peak_memory
  size_t cached_bytes = 0;       // freed blocks the allocator keeps for reuse (not in current_bytes)
  uint64_t allocations = 0;      // allocate calls so far
  uint64_t allocated_bytes = 0;  // bytes handed out by those calls, summed (never decreases)
};

// DeviceError when the device kind has no allocator in this build (CUDA without the backend).
MemoryStats memory_stats(Device device);
// Restarts peak_bytes from current_bytes (as tf.config.experimental.reset_memory_stats).
void reset_peak_memory(Device device);

// Bytes of tensor storage the calling thread has allocated since it started, on any device;
// never decreases. The difference over a span of code is what that code allocated.
uint64_t thread_allocated_bytes();

// What an allocator implements to be counted; each registers itself once for its kind.
class MemoryStatsSource {
 public:
  virtual ~MemoryStatsSource() = default;
  virtual MemoryStats stats(int device_index) const = 0;
  virtual void reset_peak(int device_index) = 0;
  // The most held since the previous call (the first call: since start), then restarts the
  // window from what is held now. Kept apart from peak_bytes so that the profiler's per-step
  // peaks never disturb a user's reset_peak_memory.
  virtual size_t take_window_peak(int device_index) = 0;
};
void register_memory_stats(DeviceKind kind, MemoryStatsSource* source);

namespace detail {
// The profiler's per-step peak (see MemoryStatsSource::take_window_peak).
size_t take_window_peak(Device device);
// Called by Storage for every block, on the allocating thread.
void count_thread_allocation(size_t bytes);
}  // namespace detail

}  // namespace keras
