#include "backend/memory_stats.h"

#include <array>
#include <atomic>

#include "backend/allocator.h"
#include "backend/errors.h"

namespace keras {
namespace {

std::array<std::atomic<MemoryStatsSource*>, kNumDeviceKinds>& sources() {
  static std::array<std::atomic<MemoryStatsSource*>, kNumDeviceKinds> table{};
  return table;
}

thread_local uint64_t t_allocated = 0;

MemoryStatsSource& source_for(Device device) {
  // Asking for the allocator first creates the CPU one (which registers its statistics) and
  // raises the DeviceError naming the kind when this build has none.
  (void)allocator_for(device.kind);
  MemoryStatsSource* s = sources()[static_cast<int>(device.kind)].load(std::memory_order_acquire);
  if (!s)
    fail<DeviceError>("memory_stats", "byte statistics for " + device.str(), "an allocator that keeps none");
  return *s;
}

}  // namespace

void register_memory_stats(DeviceKind kind, MemoryStatsSource* source) {
  sources()[static_cast<int>(kind)].store(source, std::memory_order_release);
}

MemoryStats memory_stats(Device device) { return source_for(device).stats(device.index); }

void reset_peak_memory(Device device) { source_for(device).reset_peak(device.index); }

uint64_t thread_allocated_bytes() { return t_allocated; }

namespace detail {
size_t take_window_peak(Device device) { return source_for(device).take_window_peak(device.index); }
void count_thread_allocation(size_t bytes) { t_allocated += bytes; }
}  // namespace detail

}  // namespace keras
