#include "backend/omp_wait_policy.h"

#include <sched.h>
#include <strings.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "backend/threads.h"

namespace keras {
namespace {

// `value` without surrounding blanks, as libgomp reads its variables.
std::string_view trimmed(const char* value) {
  std::string_view s(value);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// GOMP_SPINCOUNT: 1 when it asks for spinning, 0 when it forbids it, -1 when unset or invalid.
// libgomp reads "infinite"/"infinity", or a number (strtoull's syntax) with an optional k/M/G/T
// suffix, blanks allowed around each part.
int spincount_spins(const char* value) {
  if (!value) return -1;
  const std::string_view s = trimmed(value);
  if (s.size() >= 8 && (equals_ignoring_case(s.substr(0, 8), "infinite") || equals_ignoring_case(s.substr(0, 8), "infinity")))
    return s.size() == 8 ? 1 : -1;
  const std::string number(s);
  errno = 0;
  char* end = nullptr;
  const unsigned long long count = std::strtoull(number.c_str(), &end, 10);
  if (errno || end == number.c_str()) return -1;
  std::string_view rest = trimmed(end);  // a view into `number`
  if (!rest.empty()) {
    if (std::string_view("kKmMgGtT").find(rest.front()) == std::string_view::npos) return -1;
    rest = trimmed(rest.data() + 1);
    if (!rest.empty()) return -1;
  }
  return count > 0 ? 1 : 0;
}

}  // namespace

bool omp_threads_spin(const char* omp_wait_policy, const char* gomp_spincount, int team, int cores) {
  // More threads than cores: libgomp throttles spinning to 100 (1000 when active) rounds.
  if (team > cores) return false;
  if (const int spins = spincount_spins(gomp_spincount); spins >= 0) return spins == 1;
  return !(omp_wait_policy && equals_ignoring_case(trimmed(omp_wait_policy), "passive"));
}

bool omp_threads_spin() {
  return omp_threads_spin(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"), num_threads(),
                          available_cores());
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

}  // namespace keras
