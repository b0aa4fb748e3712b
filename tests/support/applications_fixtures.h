// The keras.applications fixtures made by real Keras (tests/data/keras/applications/): paths,
// gzipped or plain JSON, the lists of architectures and of weighted members.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace keras::testing::applications {

inline const std::string kDir = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/applications/";

// A file's text, gunzipped when it is gzipped (zlib passes plain files through).
inline std::string read_text(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// kDir + stem + suffix, plain or with .gz; "" when neither exists.
inline std::string find(const std::string& stem, const std::string& suffix) {
  for (const std::string& p : {kDir + stem + suffix, kDir + stem + suffix + ".gz"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

// The stems of the files whose names contain `marker` (".manifest.json", ".input0.npy"), sorted.
inline std::vector<std::string> stems_with(const std::string& marker) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kDir)) {
    const std::string n = e.path().filename().string();
    const auto at = n.find(marker);
    if (at != std::string::npos) out.push_back(n.substr(0, at));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace keras::testing::applications
