// Readers: CSV and NPY/NPZ, on small files written here, malformed ones included (each error
// must name the file and the row or entry). Image directories: test_dataset_images.cpp.
#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "keras/utils/zip.h"
#include "keras/data/readers.h"
#include "support/reader_files.h"

using namespace keras;
using namespace keras::data;
using keras::testing::expect_error;
using keras::testing::Readers;
namespace fs = std::filesystem;

namespace {

// numpy.savez_compressed-style archive written by Python's zipfile (force_zip64, deflate):
// a.npy = int64 arange(6).reshape(2, 3); b.npy = big-endian float32 [1.5, -2.0, 4.25].
const char kPythonNpz[] =
    "\x50\x4b\x03\x04\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\x59\x9b\xda\x7d\xff\xff\xff\xff\xff\xff"
    "\xff\xff\x05\x00\x14\x00\x61\x2e\x6e\x70\x79\x01\x00\x10\x00\xb0\x00\x00\x00\x00\x00\x00\x00\x56"
    "\x00\x00\x00\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8\x50\xc6\x50\xad\x9e\x92\x5a\x9c\x5c"
    "\xa4\x6e\xa5\xa0\x6e\x93\x69\xa1\xae\xa3\xa0\x9e\x96\x5f\x54\x52\x94\x98\x17\x9f\x5f\x94\x92\x0a"
    "\x12\x77\x4b\xcc\x29\x4e\x05\x8a\x17\x67\x24\x16\xa4\x02\xf9\x1a\x46\x3a\x0a\xc6\x9a\x3a\x0a\xb5"
    "\x0a\x64\x03\x2e\x06\x28\x60\x84\xd2\x4c\x50\x9a\x19\x4a\xb3\x40\x69\x56\x28\x0d\x00\x50\x4b\x03"
    "\x04\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\x02\x8a\x1f\x04\xff\xff\xff\xff\xff\xff\xff\xff\x05"
    "\x00\x14\x00\x62\x2e\x6e\x70\x79\x01\x00\x10\x00\x8c\x00\x00\x00\x00\x00\x00\x00\x4f\x00\x00\x00"
    "\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8\x50\xc6\x50\xad\x9e\x92\x5a\x9c\x5c\xa4\x6e\xa5"
    "\xa0\x6e\x97\x66\xa2\xae\xa3\xa0\x9e\x96\x5f\x54\x52\x94\x98\x17\x9f\x5f\x94\x92\x0a\x12\x77\x4b"
    "\xcc\x29\x4e\x05\x8a\x17\x67\x24\x16\xa4\x02\xf9\x1a\xc6\x3a\x9a\x3a\x0a\xb5\x0a\x14\x00\x2e\xfb"
    "\x03\x0c\x0c\x40\xc4\xe0\xd0\xc1\xc0\x00\x00\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00\x00\x08\x00\x00"
    "\x00\x21\x00\x59\x9b\xda\x7d\x56\x00\x00\x00\xb0\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x80\x01\x00\x00\x00\x00\x61\x2e\x6e\x70\x79\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00\x00"
    "\x08\x00\x00\x00\x21\x00\x02\x8a\x1f\x04\x4f\x00\x00\x00\x8c\x00\x00\x00\x05\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x80\x01\x8d\x00\x00\x00\x62\x2e\x6e\x70\x79\x50\x4b\x05\x06\x00\x00\x00"
    "\x00\x02\x00\x02\x00\x66\x00\x00\x00\x13\x01\x00\x00\x00\x00"
;

std::string npy_bytes(const std::string& descr, const std::string& shape, const std::string& data, bool fortran = false) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xFF);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Every pair of bytes swapped: little-endian 2-byte elements to big-endian.
std::string swap_pairs(std::string s) {
  for (size_t i = 0; i + 1 < s.size(); i += 2) std::swap(s[i], s[i + 1]);
  return s;
}

// LC_NUMERIC set to a locale whose decimal point is ',' while in scope (strtod would then stop at
// '.'). Minimal containers install no such locale, so one is built with localedef into `dir`,
// which glibc finds through LOCPATH; `active` is false when neither works.
class CommaDecimalLocale {
 public:
  explicit CommaDecimalLocale(const fs::path& dir) : old_(std::setlocale(LC_NUMERIC, nullptr)) {
    for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"})
      if ((active = std::setlocale(LC_NUMERIC, name) != nullptr)) return;
    const std::string cmd = "localedef -i de_DE -f UTF-8 '" + (dir / "de_DE.UTF-8").string() + "' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == -1 || !fs::is_directory(dir / "de_DE.UTF-8")) return;
    if (const char* p = std::getenv("LOCPATH")) old_locpath_ = p;
    ::setenv("LOCPATH", dir.c_str(), 1);
    set_locpath_ = true;
    active = std::setlocale(LC_NUMERIC, "de_DE.UTF-8") != nullptr;
  }
  ~CommaDecimalLocale() {
    std::setlocale(LC_NUMERIC, old_.c_str());
    if (set_locpath_ && old_locpath_) ::setenv("LOCPATH", old_locpath_->c_str(), 1);
    else if (set_locpath_) ::unsetenv("LOCPATH");
  }
  bool active = false;

 private:
  std::string old_;
  std::optional<std::string> old_locpath_;
  bool set_locpath_ = false;
};

}  // namespace

// ---------------------------------------------------------------- CSV

TEST_F(Readers, CsvTypedColumnsAndLabel) {
  auto path = file("t.csv", "height,count,\"name, quoted\",label\n1.5,2,3,0\n\n-2.25, 7 ,\"4\",1\n0,1,2e1,2\n");
  CsvOptions o{.column_types = {DType::float32, DType::int32, DType::float32, DType::int64}, .label_name = "label"};
  CsvData d = read_csv(path, o);
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"height", "count", "name, quoted"}));
  EXPECT_EQ(d.label_name, "label");
  EXPECT_EQ(d.features.dtype(), DType::float32);
  EXPECT_EQ(d.features.shape(), (Shape{3, 3}));
  EXPECT_EQ(d.features.to_vector<float>(), (std::vector<float>{1.5f, 2, 3, -2.25f, 7, 4, 0, 1, 20}));
  EXPECT_EQ(d.labels.dtype(), DType::int64);
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));

  Dataset ds = csv_dataset(path, o);
  EXPECT_EQ(ds.cardinality(), 3);
  auto it = ds.iterator();
  auto row = it.next();
  ASSERT_TRUE(row);
  EXPECT_EQ((*row)[0].to_vector<float>(), (std::vector<float>{1.5f, 2, 3}));
  EXPECT_EQ((*row)[1].item(), 0);

  // No header, label by position, all-int features keep their type.
  auto p2 = file("n.csv", "1,2,9\n3,4,8\n");
  CsvData n = read_csv(p2, {.header = false, .column_types = {DType::int64, DType::int64, DType::int32}, .label_index = 2});
  EXPECT_EQ(n.features.dtype(), DType::int64);
  EXPECT_EQ(n.features.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(n.labels.to_vector<int32_t>(), (std::vector<int32_t>{9, 8}));
  EXPECT_EQ(n.feature_names, (std::vector<std::string>{"column_0", "column_1"}));
}

TEST_F(Readers, CsvMalformedRowsNameFileAndLine) {
  auto missing = file("missing.csv", "a,b,c\n1,2,3\n4,5\n");
  expect_error<IOError>([&] { read_csv(missing); }, {missing, "line 3", "data row 2", "3 fields", "got 2 fields"});
  auto empty = file("empty.csv", "a,b,c\n1,,3\n");
  expect_error<IOError>([&] { read_csv(empty); }, {empty, "line 2", "column 'b'", "missing"});
  auto extra = file("extra.csv", "a,b\n1,2,3\n");
  expect_error<IOError>([&] { read_csv(extra); }, {extra, "line 2", "got 3 fields"});
  auto text = file("text.csv", "a,b\n1,x\n");
  expect_error<IOError>([&] { read_csv(text); }, {text, "line 2", "column 'b'", "'x'"});
  auto frac = file("frac.csv", "a\n1.5\n");
  expect_error<IOError>([&] { read_csv(frac, {.column_types = {DType::int32}}); }, {frac, "line 2", "int32"});
  expect_error<ValueError>([&] { read_csv(frac, {.label_name = "nope"}); }, {"'nope'", "a"});
  expect_error<IOError>([&] { read_csv((dir / "absent.csv").string()); }, {"absent.csv"});
  // Nothing half-loaded: the error leaves no partial result, so a csv_dataset is never built.
  EXPECT_THROW(csv_dataset(missing), IOError);
}

TEST_F(Readers, CsvCrlfLineEndsAndTextAfterQuote) {
  auto path = file("crlf.csv", "a,\"label\"\r\n1.5,\"4\"\r\n\r\n2,5\r\n");
  CsvData d = read_csv(path, {.label_name = "label"});
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"a"}));
  EXPECT_EQ(d.features.to_vector<float>(), (std::vector<float>{1.5f, 2}));
  EXPECT_EQ(d.labels.to_vector<float>(), (std::vector<float>{4, 5}));
  auto spaced = file("spaced.csv", "a,b\n\"1\" \t,2\n");  // blanks after a closing quote are fine
  EXPECT_EQ(read_csv(spaced).features.to_vector<float>(), (std::vector<float>{1, 2}));
  auto after = file("after.csv", "a,b\n3,4\n\"1\"x,2\n");
  expect_error<IOError>([&] { read_csv(after); }, {after, "line 3", "closing quote of field 1", "got 'x,2'"});
  auto last = file("last.csv", "a,b\r\n3,\"4\" 5\r\n");
  expect_error<IOError>([&] { read_csv(last); }, {last, "line 2", "closing quote of field 2", "got '5'"});
}

TEST_F(Readers, CsvUtf8ByteOrderMarkSkipped) {
  auto path = file("bom.csv", "\xEF\xBB\xBF" "y,x\n1,2\n");
  CsvData d = read_csv(path, {.label_name = "y"});
  EXPECT_EQ(d.label_name, "y");
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"x"}));
  EXPECT_EQ(d.labels.to_vector<float>(), (std::vector<float>{1}));
  auto quoted = file("bomq.csv", "\xEF\xBB\xBF" "\"y\",x\n1,2\n");
  EXPECT_EQ(read_csv(quoted, {.label_name = "y"}).label_name, "y");
  auto bare = file("bom_bare.csv", "\xEF\xBB\xBF" "3,4\n");
  EXPECT_EQ(read_csv(bare, {.header = false}).features.to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST_F(Readers, CsvNumbersIgnoreTheCLocale) {
  // What strtod/strtoll accepted and refused stays so: a leading '+', range checks, the messages.
  auto signs = file("signs.csv", "a,b\n+3,+1.5e1\n-2147483648, \"-0.25\"\n");
  CsvData s = read_csv(signs, {.column_types = {DType::int32, DType::float64}});
  EXPECT_EQ(s.features.to_vector<double>(), (std::vector<double>{3, 15, -2147483648.0, -0.25}));
  auto big = file("big.csv", "a\n2147483648\n");
  expect_error<IOError>([&] { read_csv(big, {.column_types = {DType::int32}}); }, {big, "line 2", "an int32 in column 'a'", "'2147483648'"});
  auto huge = file("huge.csv", "a\n99999999999999999999\n");
  expect_error<IOError>([&] { read_csv(huge, {.column_types = {DType::int64}}); }, {huge, "an int64 in column 'a'"});
  for (const char* bad : {"+-1", "+", "1.5x", "--2"}) {
    auto p = file("bad.csv", std::string("a\n") + bad + "\n");
    expect_error<IOError>([&] { read_csv(p); }, {p, "line 2", "a number in column 'a'", std::string("'") + bad + "'"});
  }

  CommaDecimalLocale comma(dir);
  if (!comma.active) GTEST_SKIP() << "no locale with a decimal comma could be set";
  ASSERT_STREQ(std::localeconv()->decimal_point, ",");
  auto path = file("num.csv", "a,b\n1.5,-2.25e1\n");
  EXPECT_EQ(read_csv(path).features.to_vector<float>(), (std::vector<float>{1.5f, -22.5f}));
  auto comma_num = file("cnum.csv", "a\n\"1,5\"\n");
  expect_error<IOError>([&] { read_csv(comma_num); }, {comma_num, "line 2", "a number in column 'a'", "'1,5'"});
}

// ---------------------------------------------------------------- NPY / NPZ

TEST_F(Readers, NpyRoundTripEveryDtype) {
  std::vector<Tensor> ts = {Tensor::arange(0, 6).view({2, 3}), Tensor::arange(-2, 2, 1, DType::float64),
                            Tensor::arange(0, 4, 1, DType::int32).view({2, 2, 1}), Tensor::arange(5, 8, 1, DType::int64),
                            Tensor::scalar(3.5)};
  for (size_t i = 0; i < ts.size(); ++i) {
    auto path = (dir / ("t" + std::to_string(i) + ".npy")).string();
    save_npy(path, ts[i]);
    EXPECT_EQ(read(path).size() % 64, ts[i].nbytes() % 64);  // header padded to 64 bytes
    Tensor back = load_npy(path);
    EXPECT_EQ(back.shape(), ts[i].shape());
    EXPECT_EQ(back.dtype(), ts[i].dtype());
    for (int64_t k = 0; k < back.numel(); ++k) EXPECT_EQ(element_as_double(back, k), element_as_double(ts[i], k));
  }
}

TEST_F(Readers, NpyBigEndianAndFortranOrder) {
  // Big-endian float64 [1, -0.5]: bytes of the IEEE values most significant first.
  std::string be = std::string("\x3f\xf0\0\0\0\0\0\0", 8) + std::string("\xbf\xe0\0\0\0\0\0\0", 8);
  Tensor b = load_npy(file("be.npy", npy_bytes(">f8", "(2,)", be)));
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.0, -0.5}));
  // Fortran order: column-major storage of [[0, 1, 2], [3, 4, 5]].
  Tensor f = load_npy(file("f.npy", npy_bytes("<i4", "(2, 3)", raw<int32_t>({0, 3, 1, 4, 2, 5}), true)));
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST_F(Readers, MalformedNpyNamesFileAndProblem) {
  auto trunc = file("trunc.npy", npy_bytes("<f4", "(2, 3)", raw<float>({1, 2, 3, 4})));
  expect_error<IOError>([&] { load_npy(trunc); }, {trunc, "24 bytes", "float32", "(2, 3)", "got 16 bytes", "truncated"});
  auto head = file("head.npy", npy_bytes("<f4", "(2,)", "").substr(0, 30));
  expect_error<IOError>([&] { load_npy(head); }, {head, "header", "truncated"});
  auto magic = file("magic.npy", "PK\x03\x04 not an npy file at all");
  expect_error<IOError>([&] { load_npy(magic); }, {magic, "magic"});
  auto u8 = file("u8.npy", npy_bytes("<u8", "(2,)", std::string(16, '\0')));
  expect_error<IOError>([&] { load_npy(u8); }, {u8, "'<u8'", "astype"});
  auto c8 = file("c8.npy", npy_bytes("<c8", "(1,)", std::string(8, '\0')));
  expect_error<IOError>([&] { load_npy(c8); }, {c8, "'<c8'"});
  auto shape = file("shape.npy", npy_bytes("<f4", "(a, 2)", ""));
  expect_error<IOError>([&] { load_npy(shape); }, {shape, "shape"});
}

TEST_F(Readers, NpyShapeOverflowIsIOError) {
  auto big = file("big.npy", npy_bytes("<f4", "(99999999999999999999,)", ""));
  expect_error<IOError>([&] { load_npy(big); }, {big, "extents in 'shape' that fit in int64", "99999999999999999999"});
  // 2**62 * 4 elements of 4 bytes: the product wraps to 0, which matched the empty data.
  auto wrap = file("wrap.npy", npy_bytes("<f4", "(4611686018427387904, 4)", ""));
  expect_error<IOError>([&] { load_npy(wrap); }, {wrap, "size in bytes fits in int64", "(4611686018427387904, 4)"});
  auto zero = file("zero.npy", npy_bytes("<f4", "(0, 4611686018427387904, 4)", ""));
  expect_error<IOError>([&] { load_npy(zero); }, {zero, "size in bytes fits in int64"});
  EXPECT_EQ(load_npy(file("empty.npy", npy_bytes("<f4", "(0, 3)", ""))).shape(), (Shape{0, 3}));
  auto npz = (dir / "big.npz").string();
  zip::write_archive(npz, {{"h.npy", npy_bytes("<f8", "(3037000500, 3037000500)", "")}}, false);
  expect_error<IOError>([&] { load_npz(npz); }, {npz, "entry 'h.npy'", "size in bytes fits in int64"});
  zip::write_archive(npz, {{"s.npy", npy_bytes("<f8", "(18446744073709551616,)", "")}}, true);
  expect_error<IOError>([&] { load_npz(npz); }, {npz, "entry 's.npy'", "fit in int64"});
}

TEST_F(Readers, NpyNarrowDtypesWidenToInt32AndFloat32) {
  // Little-endian bytes written out by hand, the extremes of each type included.
  struct Case {
    std::string descr, bytes;
    std::vector<double> want;
  };
  const double inf = INFINITY;
  const std::vector<Case> cases = {
      {"|u1", std::string("\x00\x01\x7f\x80\xff", 5), {0, 1, 127, 128, 255}},
      {"|i1", std::string("\x80\xff\x00\x01\x7f", 5), {-128, -1, 0, 1, 127}},
      {"<i2", std::string("\x00\x80\xff\xff\x00\x00\x01\x00\xff\x7f", 10), {-32768, -1, 0, 1, 32767}},
      {"<u2", std::string("\x00\x00\x01\x00\x00\x01\x00\x80\xff\xff", 10), {0, 1, 256, 32768, 65535}},
      // 1, -2.5, the largest finite (65504), the smallest subnormal (2^-24) and normal (2^-14),
      // -65504, 1/3 rounded, +inf, -inf.
      {"<f2", std::string("\x00\x3c\x00\xc1\xff\x7b\x01\x00\x00\x04\xff\xfb\x55\x35\x00\x7c\x00\xfc", 18),
       {1, -2.5, 65504, std::ldexp(1.0, -24), std::ldexp(1.0, -14), -65504, 0.333251953125, inf, -inf}},
  };
  for (const Case& c : cases) {
    const bool wide = c.descr[2] == '2';
    for (bool big : {false, true}) {
      if (big && !wide) continue;  // one byte: no byte order
      const std::string descr = big ? ">" + c.descr.substr(1) : c.descr;
      SCOPED_TRACE(descr);
      const std::string shape = "(" + std::to_string(c.want.size()) + ",)";
      Tensor t = load_npy(file("n.npy", npy_bytes(descr, shape, big ? swap_pairs(c.bytes) : c.bytes)));
      EXPECT_EQ(t.dtype(), c.descr[1] == 'f' ? DType::float32 : DType::int32);
      ASSERT_EQ(t.numel(), static_cast<int64_t>(c.want.size()));
      for (int64_t k = 0; k < t.numel(); ++k) EXPECT_EQ(element_as_double(t, k), c.want[static_cast<size_t>(k)]) << k;
    }
  }
  // float16 zero keeps its sign; NaN stays NaN.
  Tensor z = load_npy(file("z.npy", npy_bytes(">f2", "(3,)", std::string("\x00\x00\x80\x00\x7e\x00", 6))));
  EXPECT_FALSE(std::signbit(z.to_vector<float>()[0]));
  EXPECT_TRUE(std::signbit(z.to_vector<float>()[1]));
  EXPECT_TRUE(std::isnan(z.to_vector<float>()[2]));
  // Fortran order after widening: column-major [[0, 1], [2, 3]].
  Tensor f = load_npy(file("f.npy", npy_bytes("|u1", "(2, 2)", std::string("\x00\x02\x01\x03", 4), true)));
  EXPECT_EQ(f.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
  // mnist.npz stores its images and labels as uint8.
  auto mnist = (dir / "mnist.npz").string();
  zip::write_archive(mnist, {{"x_train.npy", npy_bytes("|u1", "(1, 2, 2)", std::string("\x00\x40\x80\xff", 4))},
                             {"y_train.npy", npy_bytes("|u1", "(1,)", std::string("\x07", 1))}}, true);
  auto arrays = load_npz(mnist);
  EXPECT_EQ(arrays.at("x_train").shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(arrays.at("x_train").to_vector<int32_t>(), (std::vector<int32_t>{0, 64, 128, 255}));
  EXPECT_EQ(arrays.at("y_train").to_vector<int32_t>(), (std::vector<int32_t>{7}));
  auto trunc = file("trunc2.npy", npy_bytes("<u2", "(3,)", std::string(5, '\0')));
  expect_error<IOError>([&] { load_npy(trunc); }, {trunc, "6 bytes of uint16 data", "got 5 bytes"});
}

TEST_F(Readers, NpzStoredAndCompressedRoundTrip) {
  Tensor x = Tensor::arange(0, 12).view({3, 4});
  Tensor y = Tensor::from_vector<int64_t>({2, 0, 1});
  for (bool compressed : {false, true}) {
    auto path = (dir / (compressed ? "c.npz" : "s.npz")).string();
    save_npz(path, {{"x", x}, {"y", y}}, compressed);
    auto arrays = load_npz(path);
    ASSERT_EQ(arrays.size(), 2u);
    EXPECT_EQ(arrays.at("x").to_vector<float>(), x.to_vector<float>());
    EXPECT_EQ(arrays.at("x").shape(), x.shape());
    EXPECT_EQ(arrays.at("y").to_vector<int64_t>(), y.to_vector<int64_t>());
  }
}

TEST_F(Readers, NpzWrittenByPythonZipfile) {
  auto path = file("py.npz", std::string(kPythonNpz, sizeof(kPythonNpz) - 1));
  auto arrays = load_npz(path);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays.at("a").shape(), (Shape{2, 3}));
  EXPECT_EQ(arrays.at("a").to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(arrays.at("b").to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 4.25f}));
}

TEST_F(Readers, MalformedNpzNamesFileAndEntry) {
  save_npz((dir / "ok.npz").string(), {{"x", Tensor::arange(0, 100)}}, true);
  std::string good = read((dir / "ok.npz").string());
  auto cut = file("cut.npz", good.substr(0, good.size() / 2));
  expect_error<IOError>([&] { load_npz(cut); }, {cut, "end-of-central-directory"});
  std::string flipped = good;
  flipped[60] = static_cast<char>(flipped[60] ^ 0x5A);  // inside the deflated data of x.npy
  auto bad = file("bad.npz", flipped);
  expect_error<IOError>([&] { load_npz(bad); }, {bad, "entry 'x.npy'"});
  // A well-formed archive whose array is truncated names the entry through the npy reader.
  auto inner = (dir / "inner.npz").string();
  zip::write_archive(inner, {{"w.npy", npy_bytes("<f8", "(4,)", raw<double>({1, 2}))}}, true);
  expect_error<IOError>([&] { load_npz(inner); }, {inner, "entry 'w.npy'", "32 bytes", "truncated"});
  expect_error<IOError>([&] { load_npz((dir / "absent.npz").string()); }, {"absent.npz"});
}

