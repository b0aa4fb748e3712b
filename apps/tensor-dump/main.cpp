// tensor-dump: reads the dumps keras::debugging::dump writes (keras/debugging/tensor_dump.h), the
// tfdbg list_tensors / print_tensor role for files.
//
//   tensor-dump list DIR                          every tensor of DIR/index.json: shape, dtype,
//                                                 min, max, mean, std, NaN and Inf counts
//   tensor-dump compare DIR_A DIR_B [--rtol R] [--atol A]
//                                                 each tensor of A against the same one in B
//                                                 (name, mode, epoch, step): max abs/rel
//                                                 difference and the elements outside
//                                                 |a - b| <= atol + rtol |b| (defaults 1e-5, 1e-8)
//
// Exit status: 0 (list; compare: every tensor matches); 1 when compare finds a tensor that differs,
// is missing from one side, or has another shape or dtype; 2 for bad arguments or an unreadable
// dump (the error goes to stderr).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "keras/debugging/dump_reader.h"

namespace {

const char* kUsage =
    "usage: tensor-dump list DIR\n"
    "       tensor-dump compare DIR_A DIR_B [--rtol R] [--atol A]\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "tensor-dump: " << message << "\n" << kUsage;
  std::exit(2);
}

double number(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= 0))
    usage_error(flag + ": expected a number >= 0, got '" + v + "'");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  try {
    if (args[0] == "list") {
      if (args.size() != 2) usage_error("list: expected one folder, got " + std::to_string(args.size() - 1));
      std::cout << keras::debugging::list_dump(args[1]);
      return 0;
    }
    if (args[0] == "compare") {
      std::vector<std::string> dirs;
      keras::debugging::CompareOptions o;
      for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--rtol" || args[i] == "--atol") {
          if (i + 1 >= args.size()) usage_error("expected a value after " + args[i] + ", got none");
          (args[i] == "--rtol" ? o.rtol : o.atol) = number(args[i], args[i + 1]);
          ++i;
        } else if (args[i].rfind("--", 0) == 0) {
          usage_error("expected --rtol or --atol, got '" + args[i] + "'");
        } else {
          dirs.push_back(args[i]);
        }
      }
      if (dirs.size() != 2) usage_error("compare: expected two folders, got " + std::to_string(dirs.size()));
      const auto result = keras::debugging::compare_dumps(dirs[0], dirs[1], o);
      std::cout << result.str();
      return result.all_equal() ? 0 : 1;
    }
    usage_error("expected the command list or compare, got '" + args[0] + "'");
  } catch (const std::exception& e) {
    std::cerr << "tensor-dump: " << e.what() << "\n";
    return 2;
  }
}
