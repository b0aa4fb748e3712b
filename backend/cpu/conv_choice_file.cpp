// The chooser's pin file (see conv_choice_file.h).
#include "backend/cpu/conv_choice_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/errors.h"

namespace keras::cpu {

std::vector<std::pair<std::string, ConvCandidate>> parse_pin_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail<IOError>("load_conv_choices", "a readable pin file", "'" + path + "'", "check the path (KERAS_CONV_CHOICES)");
  std::vector<std::pair<std::string, ConvCandidate>> pins;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    std::string key, name, extra;
    if (!(fields >> key) || key[0] == '#') continue;
    std::string where = path + ":" + std::to_string(number);
    const char* hint = "each line is '<key> <candidate>' as save_conv_choices writes it; delete the line (or the "
                       "file) to choose by timing again";
    if (!(fields >> name) || (fields >> extra))
      fail<IOError>(where, "two fields '<key> <candidate>'", "'" + line + "'", hint);
    auto c = conv_candidate_from_name(name);
    if (!c) fail<IOError>(where, "a candidate (direct, onednn_direct, onednn_winograd or winograd)", "'" + name + "'", hint);
    pins.emplace_back(key, *c);
  }
  return pins;
}

void write_choices(const std::vector<ConvChoice>& choices, const std::string& path) {
  // Written beside the target and renamed: a reader never sees half a file.
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    if (!out) fail<IOError>("save_conv_choices", "a writable file", "'" + path + "'", "check the folder exists");
    out << "# keras CPU convolution and Dense choices, '<key> <candidate>' per line; KERAS_CONV_CHOICES=<this file> pins them.\n"
           "# key: direction|x|kernel|y|strides|dilation|pads|groups|dtype|activation|bias|prop|threads[|deterministic]\n"
           "# (Dense: dense;inputs;units;activation;bias|threads)\n";
    for (const ConvChoice& c : choices) out << c.key << ' ' << conv_candidate_name(c.chosen) << '\n';
    if (!out.flush())
      fail<IOError>("save_conv_choices", "the file written", "a write error on '" + tmp + "'", "check the disk space");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::string got = "'";  // appended piecewise: "'" + a temporary trips GCC 12's -Wrestrict
    got += ec.message();
    got += "' for '" + path + "'";
    fail<IOError>("save_conv_choices", "a file renamed into place", got);
  }
}

}  // namespace keras::cpu
