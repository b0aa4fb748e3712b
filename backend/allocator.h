// Device memory. Each device kind registers one Allocator; Storage returns its block on release.
// The CPU allocator gives 64-byte aligned blocks and keeps freed blocks of recurring sizes, so a
// training step that allocates the same tensors as the last one touches no new pages.
#pragma once
#include <cstddef>
#include <memory>

#include "backend/device.h"

namespace keras {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns a block of at least `bytes` bytes (aligned to 64); throws std::bad_alloc.
  virtual void* allocate(size_t bytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t bytes, Device device) = 0;
  // Returns cached blocks to the system.
  virtual void empty_cache() {}
  // Bytes currently handed out (not counting cached blocks).
  virtual size_t bytes_in_use() const { return 0; }
};

// The allocator of a device kind; throws DeviceError if none is registered.
Allocator& allocator_for(DeviceKind kind);
void register_allocator(DeviceKind kind, Allocator* allocator);

// A ref-counted block of device memory shared by a tensor and its views. `version` counts
// in-place writes so that caches (e.g. reordered weights) know when a value changed.
struct Storage {
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  size_t bytes = 0;
  Device device;
  uint64_t version = 0;
};

}  // namespace keras
