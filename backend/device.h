// Where a tensor lives. CPU today; CUDA devices plug in through the same kind index
// (allocators and kernels are registered per DeviceKind).
#pragma once
#include <string>

namespace keras {

enum class DeviceKind : int { cpu = 0, cuda = 1 };
constexpr int kNumDeviceKinds = 2;

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  // "cpu", "cuda:0"
  std::string str() const;
  // Parses "cpu", "gpu", "cuda", "cuda:1"; throws ValueError otherwise.
  static Device parse(const std::string& text);
  bool operator==(const Device&) const = default;
};

std::string device_kind_name(DeviceKind kind);

// The device new tensors are created on when none is named.
Device default_device();
void set_default_device(Device device);

}  // namespace keras
