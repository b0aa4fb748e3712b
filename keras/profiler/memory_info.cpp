#include "keras/profiler/memory_info.h"

#include <cstdio>

namespace keras::debugging {

MemoryInfo memory_info(const std::string& device) { return memory_info(Device::parse(device)); }
MemoryInfo memory_info(Device device) { return memory_stats(device); }
void reset_memory_stats(const std::string& device) { reset_memory_stats(Device::parse(device)); }
void reset_memory_stats(Device device) { reset_peak_memory(device); }

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else std::snprintf(buf, sizeof buf, "%.2f %s", bytes, units[u]);
  return buf;
}

std::string memory_info_str(const MemoryInfo& m) {
  return "current " + human_bytes(static_cast<double>(m.current_bytes)) + ", peak " +
         human_bytes(static_cast<double>(m.peak_bytes)) + ", cached " + human_bytes(static_cast<double>(m.cached_bytes)) +
         ", " + std::to_string(m.allocations) + " allocations";
}

}  // namespace keras::debugging
