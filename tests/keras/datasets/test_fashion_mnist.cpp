#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "keras/datasets/fashion_mnist.h"

using namespace keras;
namespace fs = std::filesystem;
namespace fm = keras::datasets::fashion_mnist;

namespace {

std::vector<uint8_t> be32(uint32_t v) {
  return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
}

// An IDX ubyte file: magic, extents, payload.
std::vector<uint8_t> idx(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload,
                         uint32_t magic = 0) {
  std::vector<uint8_t> out = be32(magic ? magic : 0x0800u + static_cast<uint32_t>(dims.size()));
  for (uint32_t d : dims) {
    auto b = be32(d);
    out.insert(out.end(), b.begin(), b.end());
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// Writes `bytes` as a gzip file made of stored (uncompressed) deflate blocks, so that the test
// needs no zlib of its own (the library links zlib privately).
void write_gz(const fs::path& path, const std::vector<uint8_t>& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xFFFFFFFFu;
  std::vector<uint8_t> out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(bytes.size() - pos, 65535);
    const bool last = pos + n == bytes.size();
    out.push_back(last ? 1 : 0);
    out.push_back(uint8_t(n));
    out.push_back(uint8_t(n >> 8));
    out.push_back(uint8_t(~n));
    out.push_back(uint8_t(~n >> 8));
    out.insert(out.end(), bytes.begin() + pos, bytes.begin() + pos + n);
    pos += n;
  } while (pos < bytes.size());
  const uint32_t size = static_cast<uint32_t>(bytes.size());
  for (uint32_t v : {crc, size}) {
    for (int k = 0; k < 4; ++k) out.push_back(uint8_t(v >> (8 * k)));
  }
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(out.data()), out.size());
}

void write_plain(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A per-test scratch folder holding a tiny but valid Fashion-MNIST: n_train / n_test images
// whose pixels are (image index + pixel index) % 256 and labels image index % 10.
class TinyDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("keras_datasets_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_split("train", 3);
    write_split("t10k", 2);
  }
  void TearDown() override { fs::remove_all(dir); }

  static std::vector<uint8_t> pixels(uint32_t n) {
    std::vector<uint8_t> p(n * 784);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>((i / 784 + i) % 256);
    return p;
  }
  static std::vector<uint8_t> labels(uint32_t n) {
    std::vector<uint8_t> l(n);
    for (uint32_t i = 0; i < n; ++i) l[i] = static_cast<uint8_t>(i % 10);
    return l;
  }
  void write_split(const std::string& prefix, uint32_t n) {
    write_gz(dir / (prefix + "-images-idx3-ubyte.gz"), idx({n, 28, 28}, pixels(n)));
    write_gz(dir / (prefix + "-labels-idx1-ubyte.gz"), idx({n}, labels(n)));
  }
  // Runs load_data expecting IOError; returns its message.
  std::string load_error() {
    try {
      fm::load_data(dir.string());
    } catch (const IOError& e) {
      return e.what();
    }
    ADD_FAILURE() << "load_data did not throw IOError";
    return "";
  }

  fs::path dir;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(FashionMnist, RealData) {
  auto [train, test] = fm::load_data();
  EXPECT_EQ(train.x.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(train.y.shape(), (Shape{60000}));
  EXPECT_EQ(test.x.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(test.y.shape(), (Shape{10000}));
  EXPECT_EQ(train.x.dtype(), DType::float32);
  EXPECT_EQ(train.y.dtype(), DType::int64);

  // First labels as read by Python's gzip module from the same files.
  const auto y = train.y.to_vector<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(y.begin(), y.begin() + 10), (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(test.y.to_vector<int64_t>()[0], 9);
  EXPECT_STREQ(fm::class_names[y[0]], "Ankle boot");
  std::vector<int64_t> per_class(10, 0);
  for (int64_t label : y) {
    ASSERT_GE(label, 0);
    ASSERT_LE(label, 9);
    ++per_class[label];
  }
  for (int64_t c : per_class) EXPECT_EQ(c, 6000);  // Fashion-MNIST is balanced

  const float* x = train.x.data<float>();
  double first_image_sum = 0;
  float lo = 255, hi = 0;
  for (int i = 0; i < 784; ++i) {
    first_image_sum += x[i];
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  EXPECT_EQ(first_image_sum, 76247);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 255);
}

TEST_F(TinyDataset, LoadsValuesFromGivenDirectory) {
  auto [train, test] = fm::load_data(dir.string());
  ASSERT_EQ(train.x.shape(), (Shape{3, 28, 28}));
  ASSERT_EQ(test.x.shape(), (Shape{2, 28, 28}));
  EXPECT_EQ(train.y.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  auto expected = pixels(3);
  auto got = train.x.to_vector<float>();
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "pixel " << i;
}

TEST_F(TinyDataset, ReadsUncompressedFiles) {
  fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
  write_plain(dir / "t10k-labels-idx1-ubyte", idx({2}, {7, 8}));
  auto data = fm::load_data(dir.string());
  EXPECT_EQ(data.test.y.to_vector<int64_t>(), (std::vector<int64_t>{7, 8}));
}

TEST_F(TinyDataset, EnvironmentVariableNamesTheRoot) {
  fs::path root = dir / "root";
  fs::create_directories(root / "fashion-mnist");
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) fs::copy_file(entry.path(), root / "fashion-mnist" / entry.path().filename());
  }
  ::setenv("KERAS_DATASETS_DIR", root.c_str(), 1);
  EXPECT_EQ(fm::default_directory(), (root / "fashion-mnist").string());
  auto data = fm::load_data();
  ::unsetenv("KERAS_DATASETS_DIR");
  EXPECT_EQ(data.train.x.dim(0), 3);
  EXPECT_EQ(fm::default_directory(), "/usr/share/datasets/fashion-mnist");
}

TEST_F(TinyDataset, TruncatedGzipNamesTheFile) {
  fs::path file = dir / "train-images-idx3-ubyte.gz";
  auto size = fs::file_size(file);
  fs::resize_file(file, size / 2);
  std::string msg = load_error();
  EXPECT_TRUE(contains(msg, file.string())) << msg;
  EXPECT_TRUE(contains(msg, "2352 bytes of 3 records")) << msg;
}

TEST_F(TinyDataset, FewerRecordsThanHeaderSays) {
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx({5, 28, 28}, pixels(2)));
  std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "t10k-images-idx3-ubyte.gz")) << msg;
  EXPECT_TRUE(contains(msg, "truncated")) << msg;
}

TEST_F(TinyDataset, TrailingData) {
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx({3}, {1, 2, 3, 4}));
  std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "train-labels-idx1-ubyte.gz")) << msg;
  EXPECT_TRUE(contains(msg, "trailing data")) << msg;
}

TEST_F(TinyDataset, WrongMagic) {
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx({3}, labels(3), 0x00000803));
  std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "train-labels-idx1-ubyte.gz")) << msg;
  EXPECT_TRUE(contains(msg, "magic number 0x00000801")) << msg;
  EXPECT_TRUE(contains(msg, "got 0x00000803")) << msg;
}

TEST_F(TinyDataset, WrongImageSize) {
  write_gz(dir / "train-images-idx3-ubyte.gz", idx({1, 32, 32}, std::vector<uint8_t>(1024)));
  std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "expected extent 28 on axis 1, got 32")) << msg;
}

TEST_F(TinyDataset, LabelCountMismatch) {
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx({2}, labels(2)));
  std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "expected 3 labels")) << msg;
  EXPECT_TRUE(contains(msg, "got 2")) << msg;
}

TEST_F(TinyDataset, LabelOutOfRange) {
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx({2}, {3, 10}));
  std::string msg = load_error();
  EXPECT_TRUE(contains(msg, "labels in 0..9, got 10 at index 1")) << msg;
}

TEST(FashionMnist, MissingDirectoryTellsHowToInstall) {
  try {
    fm::load_data("/nonexistent/keras-datasets-test");
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "/nonexistent/keras-datasets-test/train-images-idx3-ubyte.gz")) << msg;
    EXPECT_TRUE(contains(msg, "dataset-fashion-mnist")) << msg;
    EXPECT_TRUE(contains(msg, "scripts/setup.sh")) << msg;
  }
}
