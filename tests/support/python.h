// Reference checks in Python (h5py, tensorboard) from a test. They run in the test environment's
// interpreter: the virtual environment scripts/setup.sh makes in <source>/.venv, since Python
// packages are test references only and never go into the system's or ~/.local's Python.
// KERAS_TEST_PYTHON names another interpreter; without either, /usr/bin/python3 is tried (its
// modules may be Debian's). Without an interpreter, or without a module, the caller skips.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace test_support {

// The interpreter to use, or "" when there is none.
inline std::string python_path() {
  if (const char* p = std::getenv("KERAS_TEST_PYTHON"); p && *p) return p;
  for (const std::string p : {std::string(KERAS_SOURCE_DIR) + "/.venv/bin/python3", std::string("/usr/bin/python3")})
    if (access(p.c_str(), X_OK) == 0) return p;
  return "";
}

inline std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs the script file with `args` and returns its stdout. Sets `skip` (with the reason) when there
// is no interpreter or the script exits 77 (its way of saying a module is missing); any other
// non-zero exit is a test failure carrying the script's stderr, and returns "".
inline std::string run_python_file(const std::string& script, const std::vector<std::string>& args, std::string& skip) {
  const std::string python = python_path();
  if (python.empty()) {
    skip = "no test Python: run `bash scripts/setup.sh` (it makes .venv) or set KERAS_TEST_PYTHON";
    return "";
  }
  namespace fs = std::filesystem;
  const fs::path err = fs::temp_directory_path() / ("keras_python_" + std::to_string(getpid()) + ".err");
  std::string cmd = shell_quoted(python) + " " + shell_quoted(script);
  for (const auto& a : args) cmd += " " + shell_quoted(a);
  cmd += " 2>" + shell_quoted(err.string());
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    skip = "popen failed";
    return "";
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  std::ifstream ein(err);
  const std::string errors((std::istreambuf_iterator<char>(ein)), std::istreambuf_iterator<char>());
  fs::remove(err);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 77) {
    skip = "a Python module is missing for " + python + " (" + errors + "); `bash scripts/setup.sh` installs it";
    return "";
  }
  if (code != 0) {
    ADD_FAILURE() << script << " failed with exit code " << code << ":\n" << errors;
    return "";
  }
  return out;
}

// The same for inline code; `modules` are imported first, and a failed import exits 77.
inline std::string run_python(const std::string& code, const std::vector<std::string>& args,
                              const std::vector<std::string>& modules, std::string& skip) {
  namespace fs = std::filesystem;
  const fs::path script = fs::temp_directory_path() / ("keras_python_" + std::to_string(getpid()) + ".py");
  {
    std::ofstream out(script);
    out << "import sys\n";
    for (const auto& m : modules)
      out << "try:\n    import " << m << "\nexcept Exception as e:\n    print(repr(e), file=sys.stderr)\n"
          << "    sys.exit(77)\n";
    out << code;
  }
  std::string result = run_python_file(script.string(), args, skip);
  fs::remove(script);
  return result;
}

}  // namespace test_support
