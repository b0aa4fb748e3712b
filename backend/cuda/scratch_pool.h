// Scratch memory for the launchers of shape_kernels.h (kernels::Scratch): device blocks from
// Tensor::empty (the caching allocator), held until the pool is destroyed. Destroying the pool
// right after the launches is safe: a freed block is handed to later work only, which is queued
// after these kernels on the same stream.
#pragma once
#include <cstdint>

#include "backend/cuda/shape_kernels.h"
#include "backend/op_registry.h"

namespace keras::cuda {

class ScratchPool {
 public:
  explicit ScratchPool(Device device) : device_(device) {}
  // At least `bytes` bytes (the allocator aligns blocks to at least 256 bytes).
  void* get(size_t bytes) {
    Tensor t = Tensor::empty({static_cast<int64_t>((bytes + 7) / 8)}, DType::int64, device_);
    held_.push_back(t);
    return t.raw_data();
  }
  kernels::Scratch fn() {
    return [this](size_t bytes) { return get(bytes); };
  }

 private:
  Device device_;
  TensorList held_;
};

}  // namespace keras::cuda
