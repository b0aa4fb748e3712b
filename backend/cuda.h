// The CUDA backend's public queries. Always declared, whatever the build: without the backend
// (built() is false) or without a driver or device, device_count() is 0 and the rest are no-ops,
// so that callers and tests can ask first and skip. Tensors reach a GPU with
// Tensor::to(Device::cuda(i)) or by creating them on Device::cuda(i); ops then run there
// (NotImplementedError naming the op where a CUDA kernel is missing).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace keras::cuda {

// Whether this library was built with the CUDA backend (CMake KERAS_CUDA).
bool built();

// Number of usable CUDA devices; 0 without the backend, driver or device. Never throws.
int device_count();
inline bool is_available() { return device_count() > 0; }
// Why device_count() is 0 ("" when it is not): for skip messages and diagnostics.
std::string unavailable_reason();

// The caching allocator of one device. Blocks are reused by size class; `device_mallocs`
// counts the cudaMalloc calls, so a steady training step leaves it unchanged.
struct AllocatorStats {
  size_t bytes_in_use = 0;    // handed out to live storages (rounded to the size class)
  size_t peak_bytes_in_use = 0;  // the most bytes_in_use has been (keras::reset_peak_memory restarts it)
  size_t bytes_cached = 0;    // freed blocks kept for reuse
  uint64_t device_mallocs = 0;
  uint64_t cache_hits = 0;    // allocations served from the cache
  uint64_t device_frees = 0;  // blocks returned with cudaFree (empty_cache, out-of-memory retry)
};
// Zeros when the backend is absent or `device` was never used.
AllocatorStats allocator_stats(int device = 0);
// Returns every cached block of every device to the driver (waits for the devices first).
void empty_cache();

// Waits until the work queued on `device`'s stream is done; DeviceError on a CUDA error.
// No-op without the backend.
void synchronize(int device = 0);

// TF32 tensor cores for float32 convolutions, matmuls and recurrent layers on the GPU: on by
// default, as in Keras on TensorFlow (products keep 10 mantissa bits; sums stay float32); off,
// float32 results match the CPU to float precision. The environment variable KERAS_ALLOW_TF32
// (0 or 1) sets the default, read on first use; allow_tf32() throws ValueError on another value.
// set_allow_tf32 applies to ops issued after the call, on every thread.
void set_allow_tf32(bool allow);
bool allow_tf32();
// KERAS_ALLOW_TF32's reading: unset or empty gives true; "1"/"true", "0"/"false"; else ValueError.
bool tf32_from_environment(const char* value);

// Deterministic GPU convolutions (cuDNN, backend/cuda/conv_ops.cpp): algorithms are chosen among
// those cuDNN reports deterministic, from its heuristics (the same choice in every process on the
// same GPU and library) rather than by timing. Off by default; applies to convolutions issued
// after the call, on every thread. keras::utils::enable_op_determinism is meant to turn it on.
void set_deterministic(bool on);
bool deterministic();

// Tests and diagnostics of the GPU convolutions: force the plain direct CUDA kernels (the
// fallback for problems cuDNN declines) instead of cuDNN, and count which path ran.
void set_conv_force_direct(bool on);
bool conv_force_direct();
struct ConvCounters {
  uint64_t cudnn_runs = 0;          // convolutions (any direction) run through cuDNN
  uint64_t direct_runs = 0;         // ... run through the direct kernels
  uint64_t algorithm_searches = 0;  // algorithm choices made (cache misses)
  uint64_t cached_algorithms = 0;   // entries in the algorithm cache
};
ConvCounters conv_counters();  // zeros without the backend
// Forgets every chosen algorithm (the next convolution of each problem chooses again).
void clear_conv_algorithm_cache();

}  // namespace keras::cuda
