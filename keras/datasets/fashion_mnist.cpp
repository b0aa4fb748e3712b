#include "keras/datasets/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

namespace keras::datasets {
namespace {

namespace fs = std::filesystem;
constexpr const char* kWhere = "fashion_mnist.load_data";

[[noreturn]] void bad_file(const std::string& path, const std::string& expected, const std::string& got) {
  fail<IOError>(std::string(kWhere) + ": " + path, expected, got,
                "The file is corrupt or incomplete; replace it (reinstall the Debian package dataset-fashion-mnist for the default folder).");
}

// Reads a gzip-compressed or plain file (zlib reads both) through one handle, so that a
// truncated stream is reported at the read that hits it.
class GzReader {
 public:
  explicit GzReader(std::string path) : path_(std::move(path)), file_(gzopen(path_.c_str(), "rb")) {
    if (!file_) fail<IOError>(std::string(kWhere) + ": " + path_, "a readable file", "a file that cannot be opened");
    gzbuffer(file_, 1 << 18);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Fills `out` with exactly `n` bytes; `what` names them in the error.
  void read_exact(void* out, size_t n, const std::string& what) {
    auto* p = static_cast<unsigned char*>(out);
    size_t done = 0;
    while (done < n) {
      // gzread takes an unsigned count; read in chunks well below its limit.
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, size_t{1} << 30));
      int got = gzread(file_, p + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        bad_file(path_, std::to_string(n) + " bytes of " + what,
                 "a read error after " + std::to_string(done) + " bytes (" + (msg ? msg : "zlib error") + ")");
      }
      if (got == 0) {
        bad_file(path_, std::to_string(n) + " bytes of " + what,
                 "end of file after " + std::to_string(done) + " bytes (truncated)");
      }
      done += static_cast<size_t>(got);
    }
  }

  // Throws unless the stream ends here; extra bytes mean the header's counts are wrong.
  void expect_end(const std::string& what) {
    unsigned char extra;
    int got = gzread(file_, &extra, 1);
    if (got != 0) bad_file(path_, "the file to end after " + what, got < 0 ? "a read error" : "trailing data");
  }

 private:
  std::string path_;
  gzFile file_;
};

uint32_t big_endian(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

// Returns `dir/name.gz` when present, else `dir/name`; throws IOError with the install hint.
std::string locate(const fs::path& dir, const std::string& name) {
  fs::path gz = dir / (name + ".gz");
  std::error_code ec;
  if (fs::is_regular_file(gz, ec)) return gz.string();
  fs::path plain = dir / name;
  if (fs::is_regular_file(plain, ec)) return plain.string();
  fail<IOError>(kWhere, "the file " + gz.string(), "no such file",
                "Install the Debian package dataset-fashion-mnist (scripts/setup.sh does), or set "
                "KERAS_DATASETS_DIR to a folder holding fashion-mnist/.");
}

// Reads an IDX file of unsigned bytes (type code 0x08) whose extents after the first must be
// `inner`; returns the first extent and the payload.
std::vector<uint8_t> read_idx_u8(const std::string& path, const Shape& inner, int64_t& count) {
  GzReader in(path);
  const uint32_t rank = static_cast<uint32_t>(inner.size()) + 1;
  const uint32_t magic = 0x0800u + rank;  // 0x00 0x00, type 0x08 (ubyte), number of dims
  unsigned char header[4 * 4];
  in.read_exact(header, 4, "IDX header");
  uint32_t got_magic = big_endian(header);
  if (got_magic != magic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%08X", got_magic);
    char want[64];
    std::snprintf(want, sizeof want, "IDX magic number 0x%08X", magic);
    bad_file(path, want, buf);
  }
  in.read_exact(header + 4, 4 * rank, "IDX header");
  count = big_endian(header + 4);
  for (size_t d = 0; d < inner.size(); ++d) {
    int64_t extent = big_endian(header + 8 + 4 * d);
    if (extent != inner[d]) {
      bad_file(path, "extent " + std::to_string(inner[d]) + " on axis " + std::to_string(d + 1),
               std::to_string(extent));
    }
  }
  const size_t bytes = static_cast<size_t>(count) * static_cast<size_t>(shape_numel(inner));
  std::vector<uint8_t> data(bytes);
  in.read_exact(data.data(), bytes, std::to_string(count) + " records");
  in.expect_end(std::to_string(count) + " records");
  return data;
}

Split load_split(const fs::path& dir, const std::string& prefix) {
  const std::string images_path = locate(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = locate(dir, prefix + "-labels-idx1-ubyte");
  int64_t n_images = 0, n_labels = 0;
  std::vector<uint8_t> pixels = read_idx_u8(images_path, {28, 28}, n_images);
  std::vector<uint8_t> labels = read_idx_u8(labels_path, {}, n_labels);
  if (n_images != n_labels) {
    fail<IOError>(std::string(kWhere) + ": " + labels_path, std::to_string(n_images) + " labels (one per image in " + images_path + ")",
                  std::to_string(n_labels));
  }
  Split split{Tensor::empty({n_images, 28, 28}, DType::float32, Device::cpu()),
              Tensor::empty({n_labels}, DType::int64, Device::cpu())};
  float* x = split.x.data<float>();
  const int64_t n_pixels = static_cast<int64_t>(pixels.size());
  for (int64_t i = 0; i < n_pixels; ++i) x[i] = static_cast<float>(pixels[i]);
  int64_t* y = split.y.data<int64_t>();
  for (int64_t i = 0; i < n_labels; ++i) {
    if (labels[i] >= fashion_mnist::class_names.size()) {
      bad_file(labels_path, "labels in 0..9", std::to_string(labels[i]) + " at index " + std::to_string(i));
    }
    y[i] = labels[i];
  }
  return split;
}

}  // namespace

namespace fashion_mnist {

std::string default_directory() {
  if (const char* root = std::getenv("KERAS_DATASETS_DIR"); root && *root) {
    return (fs::path(root) / "fashion-mnist").string();
  }
  return "/usr/share/datasets/fashion-mnist";
}

TrainTest load_data(const std::string& directory) {
  const fs::path dir = directory.empty() ? default_directory() : directory;
  return {load_split(dir, "train"), load_split(dir, "t10k")};
}

}  // namespace fashion_mnist
}  // namespace keras::datasets
