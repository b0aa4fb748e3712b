// keras::debugging::memory_info: what the caching allocator of a device holds, as
// tf.config.experimental.get_memory_info / reset_memory_stats report it ("current" and "peak"),
// plus the bytes kept in the cache for reuse and the allocation count.
//
//   keras::debugging::reset_memory_stats();           // peak := current
//   model.fit(x, y, {.epochs = 1});
//   auto m = keras::debugging::memory_info();         // m.peak_bytes: the most fit held at once
//
// The profiler (keras/profiler/profiler.h) writes the same figures per step into its trace.
#pragma once
#include <string>

#include "backend/device.h"
#include "backend/memory_stats.h"

namespace keras::debugging {

using MemoryInfo = MemoryStats;

// `device`: "cpu", "gpu", "cuda", "cuda:1" (Device::parse). ValueError for another text,
// DeviceError for a device kind this build has no allocator for.
MemoryInfo memory_info(const std::string& device = "cpu");
MemoryInfo memory_info(Device device);
// Restarts the peak from what is held now.
void reset_memory_stats(const std::string& device = "cpu");
void reset_memory_stats(Device device);
// "current 1.50 MiB, peak 3.00 MiB, cached 512.00 KiB, 1234 allocations"
std::string memory_info_str(const MemoryInfo& info);
// 1536 -> "1.50 KiB"
std::string human_bytes(double bytes);

}  // namespace keras::debugging
