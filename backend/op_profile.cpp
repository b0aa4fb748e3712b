#include "backend/op_profile.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace keras {
namespace {

std::atomic<bool> g_on{false};
std::mutex g_mutex;
std::map<std::pair<std::string, std::string>, OpProfileEntry>& table() {
  static std::map<std::pair<std::string, std::string>, OpProfileEntry> t;
  return t;
}

}  // namespace

void set_op_profiling(bool on) { g_on.store(on, std::memory_order_relaxed); }
bool op_profiling() { return g_on.load(std::memory_order_relaxed); }

std::vector<OpProfileEntry> op_profile() {
  std::vector<OpProfileEntry> out;
  {
    std::lock_guard lock(g_mutex);
    for (const auto& [key, e] : table()) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return out;
}

void reset_op_profile() {
  std::lock_guard lock(g_mutex);
  table().clear();
}

namespace detail {
void record_op_time(const std::string& op, const std::string& shape, double seconds, double cpu_seconds) {
  std::lock_guard lock(g_mutex);
  OpProfileEntry& e = table()[{op, shape}];
  if (e.calls == 0) e.op = op, e.shape = shape;
  ++e.calls;
  e.seconds += seconds;
  e.cpu_seconds += cpu_seconds;
}
}  // namespace detail

}  // namespace keras
