// Running the two sides of apps/benchmark as child processes: each in its own process, so that
// its peak RSS is its own, with stdout captured and its one JSON line parsed.
#pragma once
#include <sys/resource.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

struct ChildResult {
  int status = 0;
  std::string out;  // stdout; stderr goes straight to ours
  rusage usage{};
};

// Runs args[0] (a path) with extra environment variables; its stdout is captured and its
// resource usage (peak RSS included) comes from wait4. std::runtime_error when it cannot start.
ChildResult run_child(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env);

// The last line of `out` that parses as a JSON object; std::runtime_error naming `who` when none.
nlohmann::json last_json_line(const std::string& out, const std::string& who);

// std::runtime_error naming `who`, how it ended, `hint` and its stdout, unless it exited with 0.
void check_exit(const ChildResult& r, const std::string& who, const std::string& hint);

}  // namespace bench
