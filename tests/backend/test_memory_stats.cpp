// Byte statistics of the CPU caching allocator (backend/memory_stats.h): current and peak follow
// tensors' lives, reset restarts the peak, the per-thread count sees only its own thread, the
// profiler's window peak is apart from the user's peak.
#include <gtest/gtest.h>

#include <thread>

#include "backend/memory_stats.h"
#include "backend/tensor.h"

using namespace keras;

namespace {
constexpr size_t kBytes = 1 << 20;  // a multiple of the allocator's 64-byte blocks
Tensor megabyte() { return Tensor::empty({static_cast<int64_t>(kBytes / 4)}, DType::float32); }
}  // namespace

TEST(MemoryStats, CurrentAndPeakFollowTensorsAndResetRestartsThePeak) {
  const MemoryStats before = memory_stats(Device::cpu());
  EXPECT_GE(before.peak_bytes, before.current_bytes);
  {
    Tensor a = megabyte();
    Tensor b = megabyte();
    const MemoryStats during = memory_stats(Device::cpu());
    EXPECT_EQ(during.current_bytes, before.current_bytes + 2 * kBytes);
    EXPECT_GE(during.peak_bytes, during.current_bytes);
    EXPECT_EQ(during.allocations, before.allocations + 2);
    EXPECT_EQ(during.allocated_bytes, before.allocated_bytes + 2 * kBytes);
  }
  const MemoryStats after = memory_stats(Device::cpu());
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_GE(after.peak_bytes, before.current_bytes + 2 * kBytes);
  EXPECT_GE(after.cached_bytes, 2 * kBytes);  // kept for reuse (KERAS_CPU_CACHE_MB default)

  reset_peak_memory(Device::cpu());
  EXPECT_EQ(memory_stats(Device::cpu()).peak_bytes, after.current_bytes);
  { Tensor c = megabyte(); }
  EXPECT_EQ(memory_stats(Device::cpu()).peak_bytes, after.current_bytes + kBytes);
}

TEST(MemoryStats, ThreadAllocatedBytesCountsOnlyTheCallingThread) {
  const uint64_t mine = thread_allocated_bytes();
  uint64_t worker_before = 0, worker_after = 0;
  std::thread worker([&] {
    worker_before = thread_allocated_bytes();
    Tensor t = megabyte();
    worker_after = thread_allocated_bytes();
  });
  worker.join();
  EXPECT_EQ(worker_after - worker_before, kBytes);
  EXPECT_EQ(thread_allocated_bytes(), mine);
  { Tensor t = megabyte(); }
  EXPECT_EQ(thread_allocated_bytes(), mine + kBytes);
}

TEST(MemoryStats, WindowPeakIsApartFromTheUsersPeak) {
  (void)detail::take_window_peak(Device::cpu());  // restart the window
  const size_t now = memory_stats(Device::cpu()).current_bytes;
  { Tensor t = megabyte(); }
  EXPECT_EQ(detail::take_window_peak(Device::cpu()), now + kBytes);
  EXPECT_EQ(detail::take_window_peak(Device::cpu()), now);  // nothing held above `now` since
  reset_peak_memory(Device::cpu());
  { Tensor t = megabyte(); }
  (void)detail::take_window_peak(Device::cpu());
  EXPECT_EQ(memory_stats(Device::cpu()).peak_bytes, now + kBytes);  // untouched by the window
}
