// The CUDA caching allocator and the copies between host and device memory, registered for
// DeviceKind::cuda at load time.
//
// Blocks are rounded to a size class (512 B steps up to 1 MiB, 1 MiB steps above) and kept per
// device and class when freed, so a training step that repeats the last step's sizes makes no
// cudaMalloc. Reuse is safe without events because every op of a device runs on that device's
// one stream (runtime.h): the next user of a block is queued after the last one. Managed memory
// is never used. On cudaMalloc failure the device's cache is returned and the call retried once.
#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/allocator.h"
#include "backend/cuda.h"
#include "backend/cuda/runtime.h"
#include "backend/memory_stats.h"
#include "backend/tensor.h"

namespace keras::cuda {
namespace {

constexpr int kMaxDevices = 64;

size_t size_class(size_t bytes) {
  constexpr size_t small_step = 512, large_step = size_t{1} << 20;
  if (bytes == 0) return small_step;
  if (bytes <= large_step) return (bytes + small_step - 1) / small_step * small_step;
  return (bytes + large_step - 1) / large_step * large_step;
}

struct DevicePool {
  std::unordered_map<size_t, std::vector<void*>> free;
  AllocatorStats stats;
  uint64_t allocations = 0, allocated_bytes = 0;
  size_t window_peak = 0;  // the profiler's per-step peak (MemoryStatsSource::take_window_peak)

  void count_allocation(size_t size) {
    stats.bytes_in_use += size;
    stats.peak_bytes_in_use = std::max(stats.peak_bytes_in_use, stats.bytes_in_use);
    window_peak = std::max(window_peak, stats.bytes_in_use);
    ++allocations;
    allocated_bytes += size;
  }
};

class CudaAllocator final : public Allocator, public MemoryStatsSource {
 public:
  void* allocate(size_t bytes, Device device) override {
    size_t size = size_class(bytes);
    int d = device.index;
    {
      std::lock_guard lock(mutex_);
      DevicePool& pool = pool_at(d);
      auto it = pool.free.find(size);
      if (it != pool.free.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        pool.stats.bytes_cached -= size;
        pool.count_allocation(size);
        ++pool.stats.cache_hits;
        return p;
      }
    }
    DeviceGuard guard(d);
    void* p = nullptr;
    cudaError_t status = cudaMalloc(&p, size);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_cached(d);
      status = cudaMalloc(&p, size);
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw std::bad_alloc();
    }
    check(status, "cudaMalloc");
    std::lock_guard lock(mutex_);
    DevicePool& pool = pool_at(d);
    pool.count_allocation(size);
    ++pool.stats.device_mallocs;
    return p;
  }

  void deallocate(void* ptr, size_t bytes, Device device) override {
    size_t size = size_class(bytes);
    std::lock_guard lock(mutex_);
    DevicePool& pool = pool_at(device.index);
    pool.stats.bytes_in_use -= size;
    pool.stats.bytes_cached += size;
    pool.free[size].push_back(ptr);
  }

  void empty_cache() override {
    for (int d = 0; d < kMaxDevices; ++d) release_cached(d);
  }

  size_t bytes_in_use() const override {
    std::lock_guard lock(mutex_);
    size_t total = 0;
    for (const auto& pool : pools_) total += pool.stats.bytes_in_use;
    return total;
  }

  AllocatorStats cuda_stats(int device) const {
    std::lock_guard lock(mutex_);
    if (device < 0 || device >= kMaxDevices) return {};
    return pools_[static_cast<size_t>(device)].stats;
  }

  MemoryStats stats(int device) const override {
    std::lock_guard lock(mutex_);
    if (device < 0 || device >= kMaxDevices) return {};
    const DevicePool& p = pools_[static_cast<size_t>(device)];
    return {p.stats.bytes_in_use, p.stats.peak_bytes_in_use, p.stats.bytes_cached, p.allocations, p.allocated_bytes};
  }

  void reset_peak(int device) override {
    std::lock_guard lock(mutex_);
    DevicePool& p = pool_at(device);
    p.stats.peak_bytes_in_use = p.stats.bytes_in_use;
  }

  size_t take_window_peak(int device) override {
    std::lock_guard lock(mutex_);
    DevicePool& p = pool_at(device);
    return std::exchange(p.window_peak, p.stats.bytes_in_use);
  }

 private:
  DevicePool& pool_at(int device) {
    if (device < 0 || device >= kMaxDevices)
      fail<DeviceError>("cuda allocator", "a device index in [0, " + std::to_string(kMaxDevices) + ")",
                        std::to_string(device));
    return pools_[static_cast<size_t>(device)];
  }

  // Frees the cached blocks of one device after its queued work is done (a cached block may
  // still be read by a queued kernel).
  void release_cached(int device) {
    std::vector<void*> blocks;
    {
      std::lock_guard lock(mutex_);
      DevicePool& pool = pools_[static_cast<size_t>(device)];
      if (pool.stats.bytes_cached == 0) return;
      for (auto& [size, list] : pool.free) blocks.insert(blocks.end(), list.begin(), list.end());
      pool.free.clear();
      pool.stats.bytes_cached = 0;
      pool.stats.device_frees += blocks.size();
    }
    DeviceGuard guard(device);
    check(cudaStreamSynchronize(stream(device)), "cuda empty_cache");
    for (void* p : blocks) check(cudaFree(p), "cudaFree");
  }

  mutable std::mutex mutex_;
  std::array<DevicePool, kMaxDevices> pools_;
};

CudaAllocator& allocator() {
  // Never destroyed: tensors held by other statics may be released after main returns.
  static CudaAllocator* a = new CudaAllocator;
  return *a;
}

// ---- copies (both tensors contiguous, same shape and dtype; run_op/Tensor::to checked) ----

void host_to_device(const Tensor& src, Tensor& dst) {
  if (dst.nbytes() == 0) return;
  int d = dst.device().index;
  DeviceGuard guard(d);
  // From pageable memory the call returns once the source has been staged, so the host buffer
  // may be freed right after; the device side stays ordered on the stream.
  check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyHostToDevice, stream(d)),
        "copy cpu -> cuda");
}

void device_to_host(const Tensor& src, Tensor& dst) {
  if (dst.nbytes() == 0) return;
  int d = src.device().index;
  DeviceGuard guard(d);
  // The host reads the value next: wait for it (and for the kernels that produced it).
  check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToHost, stream(d)),
        "copy cuda -> cpu");
  check(cudaStreamSynchronize(stream(d)), "copy cuda -> cpu");
}

void device_to_device(const Tensor& src, Tensor& dst) {
  if (dst.nbytes() == 0) return;
  int s = src.device().index, d = dst.device().index;
  if (s == d) {
    DeviceGuard guard(d);
    check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToDevice, stream(d)),
          "copy cuda -> cuda");
    return;
  }
  // Across devices the two streams are unordered: the source must be complete before the copy,
  // and the copy complete before the source block can be reused on its own stream.
  synchronize(s);
  DeviceGuard guard(d);
  check(cudaMemcpyPeerAsync(dst.raw_data(), d, src.raw_data(), s, dst.nbytes(), stream(d)), "copy cuda -> cuda (peer)");
  check(cudaStreamSynchronize(stream(d)), "copy cuda -> cuda (peer)");
}

struct Registration {
  Registration() {
    register_allocator(DeviceKind::cuda, &allocator());
    register_memory_stats(DeviceKind::cuda, &allocator());
    register_device_copy(DeviceKind::cpu, DeviceKind::cuda, host_to_device);
    register_device_copy(DeviceKind::cuda, DeviceKind::cpu, device_to_host);
    register_device_copy(DeviceKind::cuda, DeviceKind::cuda, device_to_device);
  }
} registration;

}  // namespace

AllocatorStats allocator_stats(int device) { return allocator().cuda_stats(device); }
void empty_cache() { allocator().empty_cache(); }

}  // namespace keras::cuda
