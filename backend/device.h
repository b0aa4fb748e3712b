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

// The device new tensors (and new layer weights) are created on when none is named.
// Unless set_default_device() was called, it is resolved once, on the first call (thread-safe):
//   1. the environment variable KERAS_DEVICE: "cpu", "cuda" / "gpu" (= cuda:0) or "cuda:<N>";
//   2. else cuda:0 when cuda::device_count() > 0;
//   3. else the CPU.
// Throws ValueError naming KERAS_DEVICE for an unparsable value, and DeviceError when it names a
// CUDA device this process does not have (so "cuda:0" on a machine without a GPU fails at the
// first default_device(), not later inside some allocation). A failed resolution is not
// remembered: each later call throws again.
Device default_device();
// Overrides the resolution above for the rest of the process (every thread).
void set_default_device(Device device);
// Forgets a set or resolved default, so that the next default_device() resolves again (tests).
void reset_default_device();
// The rule default_device() applies, as a pure function: `keras_device_env` is the variable's
// value (null or "" when unset), `cuda_device_count` the number of visible GPUs. Throws as above.
Device resolve_default_device(const char* keras_device_env, int cuda_device_count);

}  // namespace keras
