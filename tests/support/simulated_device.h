// A second device for machines without a GPU. While a SimulatedCuda lives, Device::cuda(0)
// tensors are host memory behind their own allocator, every op's cuda kernel slot holds its CPU
// kernel, and copies between the two kinds are memcpy. Arithmetic is the CPU's, so this proves
// nothing about CUDA kernels; it exercises what is device-agnostic (run_op's device checks,
// autodiff seeds and zero gradients, constants made by layers and losses, the trainer's batch
// moves, saving from a device), so that a CPU-made tensor meeting a device tensor fails on every
// CI machine and not only on a GPU. On a machine with a real GPU it does nothing (tests then use
// the real device). One at a time, on one thread; everything is restored on destruction.
#pragma once
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>

#include "backend/allocator.h"
#include "backend/cuda.h"
#include "backend/device_copy.h"
#include "backend/op_registry.h"
#include "backend/tensor.h"

namespace keras::test_support {

class SimulatedCuda {
 public:
  SimulatedCuda() {
    if (cuda::device_count() > 0) return;
    active_ = true;
    auto& registry = OpRegistry::instance();
    for (const std::string& name : registry.names()) {
      const OpDef& def = registry.find(name);
      saved_kernels_[name] = def.kernels[kCuda];
      registry.register_kernel(name, DeviceKind::cuda, def.kernels[kCpu]);  // may be empty: then missing on both
    }
    try {
      saved_allocator_ = &allocator_for(DeviceKind::cuda);
    } catch (const DeviceError&) {
      saved_allocator_ = nullptr;
    }
    register_allocator(DeviceKind::cuda, &allocator_);
    saved_to_ = registered_device_copy(DeviceKind::cpu, DeviceKind::cuda);
    saved_from_ = registered_device_copy(DeviceKind::cuda, DeviceKind::cpu);
    saved_within_ = registered_device_copy(DeviceKind::cuda, DeviceKind::cuda);
    register_device_copy(DeviceKind::cpu, DeviceKind::cuda, &copy);
    register_device_copy(DeviceKind::cuda, DeviceKind::cpu, &copy);
    register_device_copy(DeviceKind::cuda, DeviceKind::cuda, &copy);
  }
  ~SimulatedCuda() {
    if (!active_) return;
    auto& registry = OpRegistry::instance();
    for (auto& [name, kernel] : saved_kernels_) registry.register_kernel(name, DeviceKind::cuda, kernel);
    register_allocator(DeviceKind::cuda, saved_allocator_);
    register_device_copy(DeviceKind::cpu, DeviceKind::cuda, saved_to_);
    register_device_copy(DeviceKind::cuda, DeviceKind::cpu, saved_from_);
    register_device_copy(DeviceKind::cuda, DeviceKind::cuda, saved_within_);
  }
  SimulatedCuda(const SimulatedCuda&) = delete;
  SimulatedCuda& operator=(const SimulatedCuda&) = delete;

  // False on a machine with a real GPU (nothing was swapped).
  bool active() const { return active_; }

 private:
  static constexpr int kCpu = static_cast<int>(DeviceKind::cpu);
  static constexpr int kCuda = static_cast<int>(DeviceKind::cuda);

  struct HostAllocator : Allocator {
    void* allocate(size_t bytes, Device) override {
      void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
      if (!p) throw std::bad_alloc();
      return p;
    }
    void deallocate(void* p, size_t, Device) override { std::free(p); }
  };

  static void copy(const Tensor& src, Tensor& dst) {
    if (src.nbytes()) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
  }

  bool active_ = false;
  HostAllocator allocator_;
  std::map<std::string, KernelFn> saved_kernels_;
  Allocator* saved_allocator_ = nullptr;
  DeviceCopyFn saved_to_ = nullptr, saved_from_ = nullptr, saved_within_ = nullptr;
};

}  // namespace keras::test_support
