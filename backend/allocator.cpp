#include "backend/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/errors.h"
#include "backend/memory_stats.h"

namespace keras {
namespace {

// Caching CPU allocator: freed blocks are kept by exact size (training steps repeat the same
// sizes), up to a byte budget; beyond it blocks go back to the system. Its byte statistics are
// kept under the same lock as the cache.
class CpuAllocator final : public Allocator, public MemoryStatsSource {
 public:
  CpuAllocator() {
    const char* env = std::getenv("KERAS_CPU_CACHE_MB");
    long mb = env ? std::strtol(env, nullptr, 10) : 2048;
    budget_ = static_cast<size_t>(mb < 0 ? 0 : mb) << 20;
  }
  ~CpuAllocator() override { empty_cache(); }

  void* allocate(size_t bytes, Device) override {
    size_t size = round_up(bytes);
    {
      std::lock_guard lock(mutex_);
      in_use_ += size;
      peak_ = std::max(peak_, in_use_);
      window_peak_ = std::max(window_peak_, in_use_);
      ++allocations_;
      allocated_bytes_ += size;
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        return p;
      }
    }
    void* p = system_allocate(size);
    if (!p) {
      empty_cache();
      p = system_allocate(size);
      if (!p) {
        std::lock_guard lock(mutex_);
        in_use_ -= size;
        --allocations_;
        allocated_bytes_ -= size;
        throw std::bad_alloc();
      }
    }
    return p;
  }

  void deallocate(void* ptr, size_t bytes, Device) override {
    size_t size = round_up(bytes);
    std::lock_guard lock(mutex_);
    in_use_ -= size;
    if (cached_ + size <= budget_) {
      free_[size].push_back(ptr);
      cached_ += size;
    } else {
      std::free(ptr);
    }
  }

  void empty_cache() override {
    std::lock_guard lock(mutex_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_ = 0;
  }

  size_t bytes_in_use() const override {
    std::lock_guard lock(mutex_);
    return in_use_;
  }

  MemoryStats stats(int) const override {
    std::lock_guard lock(mutex_);
    return {in_use_, peak_, cached_, allocations_, allocated_bytes_};
  }

  void reset_peak(int) override {
    std::lock_guard lock(mutex_);
    peak_ = in_use_;
  }

  size_t take_window_peak(int) override {
    std::lock_guard lock(mutex_);
    return std::exchange(window_peak_, in_use_);
  }

 private:
  static size_t round_up(size_t bytes) { return bytes == 0 ? 64 : (bytes + 63) / 64 * 64; }
  // Blocks of many megabytes (datasets, large weights and activations) on 2 MiB boundaries with
  // transparent huge pages asked for: one TLB entry per 2 MiB instead of per 4 KiB, which random
  // row reads (shuffled batches) and strided kernels otherwise pay a page walk for. Smaller
  // blocks: 64-byte aligned, as the kernels need.
  static void* system_allocate(size_t size) {
    constexpr size_t kHuge = size_t{2} << 20;
    if (size < 4 * kHuge) return std::aligned_alloc(64, size);
    void* p = std::aligned_alloc(kHuge, (size + kHuge - 1) / kHuge * kHuge);
    if (p) madvise(p, size, MADV_HUGEPAGE);  // advice only: where THP is off nothing changes
    return p;
  }
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0, in_use_ = 0, budget_ = 0, peak_ = 0, window_peak_ = 0;
  uint64_t allocations_ = 0, allocated_bytes_ = 0;
};

std::array<Allocator*, kNumDeviceKinds>& allocators() {
  // Never destroyed: tensors held by other statics may be released after main returns.
  static CpuAllocator* cpu = [] {
    auto* a = new CpuAllocator;
    register_memory_stats(DeviceKind::cpu, a);
    return a;
  }();
  static std::array<Allocator*, kNumDeviceKinds> table = {cpu, nullptr};
  return table;
}

}  // namespace

Allocator& allocator_for(DeviceKind kind) {
  Allocator* a = allocators()[static_cast<int>(kind)];
  if (!a)
    fail<DeviceError>("allocator_for", "a registered allocator for " + device_kind_name(kind), "none",
                      "This build has no " + device_kind_name(kind) + " backend.");
  return *a;
}

void register_allocator(DeviceKind kind, Allocator* allocator) { allocators()[static_cast<int>(kind)] = allocator; }

Storage::Storage(size_t n, Device d) : bytes(n), device(d) {
  data = allocator_for(d.kind).allocate(n, d);
  detail::count_thread_allocation(n);
}

Storage::~Storage() {
  if (data) allocator_for(device.kind).deallocate(data, bytes, device);
}

}  // namespace keras
