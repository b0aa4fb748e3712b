// apps/benchmark's child processes (see child_process.h).
#include "child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace bench {

ChildResult run_child(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> cargs;
    for (const auto& a : args) cargs.push_back(const_cast<char*>(a.c_str()));
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    std::fprintf(stderr, "benchmark: cannot run %s: %s\n", cargs[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  while (wait4(pid, &r.status, 0, &r.usage) < 0 && errno == EINTR) {}
  return r;
}

nlohmann::json last_json_line(const std::string& out, const std::string& who) {
  size_t end = out.size();
  while (end > 0) {
    size_t start = out.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = out.substr(start, end - start);
    if (!line.empty() && line[0] == '{') {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) return j;
    }
    end = start == 0 ? 0 : start - 1;
  }
  throw std::runtime_error(who + ": expected a JSON line on stdout, got:\n" + out);
}

void check_exit(const ChildResult& r, const std::string& who, const std::string& hint) {
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) return;
  std::string how = WIFEXITED(r.status) ? "exit status " + std::to_string(WEXITSTATUS(r.status))
                                        : "signal " + std::to_string(WTERMSIG(r.status));
  throw std::runtime_error(who + ": expected a clean exit, got " + how + ". " + hint + "\nstdout:\n" + r.out);
}

}  // namespace bench
