// The HDF5 wrapper: round trips in memory and on disk, both string encodings of attributes,
// Keras's split attributes, h5py-written reference files (tests/data/hdf5/make_reference.py),
// and IOErrors (never crashes) for missing, truncated, corrupt and absurd files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "keras/utils/file_util.h"
#include "keras/saving/hdf5/hdf5.h"

namespace k = keras;
namespace h5 = keras::hdf5;
namespace fs = std::filesystem;

namespace {

const std::string kDataDir = std::string(KERAS_SOURCE_DIR) + "/tests/data/hdf5/";

template <class F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const k::IOError& e) {
    return e.what();
  }
  return "<no IOError>";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("keras_test_hdf5_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// A small file with a group tree, attributes and one dataset of each dtype.
std::string sample_image() {
  auto file = h5::File::create_in_memory("sample.h5");
  auto root = file.root();
  root.write_string_attr("backend", "tensorflow");
  root.write_string_list_attr("layer_names", {"dense", "batch_normalization", "flatten"});
  auto vars = root.create_group("layers/dense/vars");
  vars.write_string_attr("name", "dense_7");
  vars.write_dataset("0", k::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  vars.write_dataset("1", k::Tensor::from_vector<double>({0.25, -0.5}, {2}));
  vars.write_dataset("2", k::Tensor::from_vector<int32_t>({7}, {1}));
  vars.write_dataset("3", k::Tensor::scalar(42, k::DType::int64));
  vars.write_dataset("4", k::Tensor::zeros({0, 4}));
  return file.image();
}

}  // namespace

TEST(Hdf5, InMemoryRoundTrip) {
  std::string image = sample_image();
  ASSERT_TRUE(h5::looks_like_hdf5(image));
  auto file = h5::File::open_image(image, "sample.h5");
  auto root = file.root();
  EXPECT_EQ(root.path(), "/");
  EXPECT_EQ(root.read_string_attr("backend"), "tensorflow");
  EXPECT_EQ(root.read_string_list_attr("layer_names"),
            (std::vector<std::string>{"dense", "batch_normalization", "flatten"}));
  ASSERT_TRUE(root.has_group("layers/dense/vars"));
  EXPECT_FALSE(root.has_dataset("layers/dense/vars"));
  EXPECT_FALSE(root.exists("layers/missing/vars"));  // a missing intermediate group is "no", not an error
  auto vars = root.open_group("layers/dense/vars");
  EXPECT_EQ(vars.path(), "/layers/dense/vars");
  EXPECT_EQ(vars.read_string_attr("name"), "dense_7");
  EXPECT_EQ(vars.children(), (std::vector<std::string>{"0", "1", "2", "3", "4"}));

  auto d0 = vars.open_dataset("0");
  EXPECT_EQ(d0.shape(), (k::Shape{2, 3}));
  EXPECT_EQ(d0.dtype(), k::DType::float32);
  EXPECT_EQ(d0.read({2, 3}).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(vars.open_dataset("1").read().to_vector<double>(), (std::vector<double>{0.25, -0.5}));
  EXPECT_EQ(vars.open_dataset("2").read().to_vector<int32_t>(), (std::vector<int32_t>{7}));
  k::Tensor scalar = vars.open_dataset("3").read();
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.dtype(), k::DType::int64);
  EXPECT_EQ(scalar.to_vector<int64_t>(), (std::vector<int64_t>{42}));
  EXPECT_EQ(vars.open_dataset("4").read().shape(), (k::Shape{0, 4}));
}

TEST(Hdf5, DiskRoundTripThroughAtomicWrite) {
  fs::path path = temp_dir() / "disk.h5";
  k::write_file_atomic(path.string(), sample_image());
  auto file = h5::File::open(path.string());
  EXPECT_EQ(file.root().open_group("layers/dense/vars").read_string_attr("name"), "dense_7");
  // No temporary file is left beside the target.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(path.parent_path())) entries += e.path().filename() == "disk.h5" ? 0 : 1;
  EXPECT_EQ(entries, 0);
  fs::remove_all(path.parent_path());
}

TEST(Hdf5, GroupsOutliveTheirFileObject) {
  h5::Group vars;
  {
    auto file = h5::File::open_image(sample_image(), "sample.h5");
    vars = file.root().open_group("layers/dense/vars");
  }
  EXPECT_EQ(vars.open_dataset("0").read().numel(), 6);
}

TEST(Hdf5, AttributesBothStringForms) {
  auto root = h5::File::open(kDataDir + "reference.h5").root();
  EXPECT_EQ(root.read_string_attr("vlen_str"), "h\xc3\xa9llo");
  EXPECT_EQ(root.read_string_attr("vlen_bytes"), "ascii");
  EXPECT_EQ(root.read_string_attr("fixed_str"), "fixed");
  EXPECT_EQ(root.read_string_list_attr("list_fixed"), (std::vector<std::string>{"dense", "batch_normalization"}));
  EXPECT_EQ(root.read_string_list_attr("list_vlen"), (std::vector<std::string>{"input_1", "inner", "head"}));
  EXPECT_TRUE(root.read_string_list_attr("empty_list").empty());  // float64 array of length 0
  EXPECT_EQ(root.read_string_list_attr("fixed_str"), (std::vector<std::string>{"fixed"}));
  EXPECT_DOUBLE_EQ(root.read_number_attr("int_attr"), 42);
  EXPECT_DOUBLE_EQ(root.read_number_attr("float_attr"), 2.5);
  auto names = root.attr_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names.size(), 10u);
  std::string err = io_error_of([&] { root.read_string_attr("list_fixed"); });
  EXPECT_TRUE(contains(err, "reference.h5")) << err;
  EXPECT_TRUE(contains(err, "one string")) << err;
  err = io_error_of([&] { root.read_string_attr("int_attr"); });
  EXPECT_TRUE(contains(err, "a string attribute")) << err;
  err = io_error_of([&] { root.read_string_attr("nope"); });
  EXPECT_TRUE(contains(err, "attribute 'nope'")) << err;
}

TEST(Hdf5, WrittenAttributesReadBackAndReplace) {
  auto file = h5::File::create_in_memory("attrs.h5");
  auto root = file.root();
  root.write_string_attr("s", "first");
  root.write_string_attr("s", "second \xe2\x9c\x93");  // replaced, UTF-8 kept
  root.write_string_list_attr("empty", {});
  root.write_string_list_attr("one", {""});
  root.write_number_attr("x", -1.5);
  root.write_int_attr("n", int64_t{1} << 40);
  auto back = h5::File::open_image(file.image(), "attrs.h5").root();
  EXPECT_EQ(back.read_string_attr("s"), "second \xe2\x9c\x93");
  EXPECT_TRUE(back.read_string_list_attr("empty").empty());
  EXPECT_EQ(back.read_string_list_attr("one"), (std::vector<std::string>{""}));
  EXPECT_DOUBLE_EQ(back.read_number_attr("x"), -1.5);
  EXPECT_DOUBLE_EQ(back.read_number_attr("n"), 1099511627776.0);
}

TEST(Hdf5, SplitAttributes) {
  // h5py-written parts are concatenated.
  auto ref = h5::File::open(kDataDir + "reference.h5").root();
  EXPECT_FALSE(ref.has_attr("names"));
  EXPECT_TRUE(ref.has_string_list_attr("names"));
  EXPECT_EQ(ref.read_string_list_attr("names"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(contains(io_error_of([&] { ref.read_string_list_attr("absent"); }), "'absent0'"));

  // A list over the 64512-byte limit is written in near-equal parts, as numpy.array_split.
  std::vector<std::string> long_list;
  for (int i = 0; i < 3001; ++i) long_list.push_back("layer_with_a_rather_long_name_" + std::to_string(i));
  auto file = h5::File::create_in_memory("split.h5");
  auto root = file.root();
  root.write_string_list_attr("layer_names", long_list);
  auto back = h5::File::open_image(file.image(), "split.h5").root();
  EXPECT_FALSE(back.has_attr("layer_names"));
  EXPECT_TRUE(back.has_attr("layer_names0"));
  EXPECT_TRUE(back.has_attr("layer_names1"));
  EXPECT_EQ(back.read_string_list_attr("layer_names"), long_list);
  // Rewriting a short list removes the stale parts.
  root.write_string_list_attr("layer_names", {"a"});
  auto again = h5::File::open_image(file.image(), "split.h5").root();
  EXPECT_FALSE(again.has_attr("layer_names0"));
  EXPECT_EQ(again.read_string_list_attr("layer_names"), (std::vector<std::string>{"a"}));
  EXPECT_THROW(root.write_string_list_attr("huge", {std::string(70000, 'x')}), k::ValueError);
}

TEST(Hdf5, ReferenceDatasets) {
  auto data = h5::File::open(kDataDir + "reference.h5").root().open_group("data");
  EXPECT_EQ(data.children(), (std::vector<std::string>{"bf16", "empty", "f16", "f32", "f64", "i32", "i64", "text", "u8"}));
  EXPECT_EQ(data.open_dataset("f32").read({2, 3}).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(data.open_dataset("f64").read().to_vector<double>(), (std::vector<double>{0.5, -1.25}));
  EXPECT_EQ(data.open_dataset("i32").read().to_vector<int32_t>(), (std::vector<int32_t>{1, -2}));
  k::Tensor i64 = data.open_dataset("i64").read({});
  EXPECT_EQ(i64.to_vector<int64_t>(), (std::vector<int64_t>{-7}));
  EXPECT_EQ(data.open_dataset("f16").read().to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(data.open_dataset("u8").read().to_vector<int32_t>(), (std::vector<int32_t>{200, 1}));
  EXPECT_EQ(data.open_dataset("empty").read({0, 3}).numel(), 0);
  std::string err = io_error_of([&] { data.open_dataset("text").read(); });
  EXPECT_TRUE(contains(err, "/data/text")) << err;
  EXPECT_TRUE(contains(err, "numeric")) << err;
}

TEST(Hdf5, Bfloat16TaggedDatasetsReadAsFloat32) {
  auto ds = h5::File::open(kDataDir + "reference.h5").root().open_dataset("data/bf16");
  EXPECT_TRUE(ds.is_bfloat16());
  EXPECT_EQ(ds.dtype(), k::DType::float32);
  k::Tensor t = ds.read({3});
  EXPECT_EQ(t.dtype(), k::DType::float32);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.0f}));
}

TEST(Hdf5, AbsurdShapesAreRejectedBeforeAllocating) {
  auto root = h5::File::open(kDataDir + "overflow.h5").root();
  for (const char* name : {"cube", "wide"}) {
    std::string err = io_error_of([&] { root.open_dataset(name).shape(); });
    EXPECT_TRUE(contains(err, "overflow.h5: /" + std::string(name))) << err;
    EXPECT_TRUE(contains(err, "fits in 64 bits")) << err;
  }
  // 4 TiB promised, nothing stored: refused instead of allocated.
  std::string err = io_error_of([&] { root.open_dataset("unstored").read(); });
  EXPECT_TRUE(contains(err, "stored bytes")) << err;
  // A shape check comes first when the caller knows the shape.
  err = io_error_of([&] { root.open_dataset("unstored").read({4}); });
  EXPECT_TRUE(contains(err, "expected shape (4,), got (1099511627776,)")) << err;
}

TEST(Hdf5, ErrorsNameFileAndPath) {
  auto root = h5::File::open_image(sample_image(), "model.weights.h5").root();
  std::string err = io_error_of([&] { root.open_dataset("layers/dense/vars/0").read({3, 2}); });
  EXPECT_TRUE(contains(err, "model.weights.h5: /layers/dense/vars/0: expected shape (3, 2), got (2, 3)")) << err;
  err = io_error_of([&] { root.open_group("layers/conv2d"); });
  EXPECT_TRUE(contains(err, "model.weights.h5: /layers/conv2d: expected a group")) << err;
  err = io_error_of([&] { root.open_group("layers/dense/vars/0"); });
  EXPECT_TRUE(contains(err, "got a dataset")) << err;
  err = io_error_of([&] { root.open_dataset("layers/dense"); });
  EXPECT_TRUE(contains(err, "got a group")) << err;
  auto file = h5::File::create_in_memory("w.h5");
  auto g = file.root().create_group("a");
  g.write_dataset("x", k::Tensor::zeros({1}));
  err = io_error_of([&] { g.write_dataset("x", k::Tensor::zeros({1})); });
  EXPECT_TRUE(contains(err, "w.h5: /a/x")) << err;
  EXPECT_THROW(file.root().create_group("a"), k::IOError);
  EXPECT_THROW(g.write_dataset("b", k::Tensor::zeros({1}, k::DType::boolean)), k::TypeError);
}

TEST(Hdf5, MissingTruncatedAndCorruptFilesGiveIOError) {
  fs::path dir = temp_dir();
  std::string err = io_error_of([&] { h5::File::open((dir / "missing.h5").string()); });
  EXPECT_TRUE(contains(err, "missing.h5")) << err;
  EXPECT_TRUE(contains(err, "no such file")) << err;
  EXPECT_TRUE(contains(io_error_of([&] { h5::File::open(dir.string()); }), "directory"));

  std::string image = sample_image();
  for (size_t keep : {size_t{0}, size_t{4}, size_t{8}, size_t{100}, image.size() / 2, image.size() - 1}) {
    std::string cut = image.substr(0, keep);
    EXPECT_THROW(h5::File::open_image(cut, "cut.h5"), k::IOError) << keep;
    fs::path path = dir / "cut.h5";
    std::ofstream(path, std::ios::binary).write(cut.data(), static_cast<std::streamsize>(cut.size()));
    err = io_error_of([&] { h5::File::open(path.string()); });
    EXPECT_TRUE(contains(err, "cut.h5")) << err;
  }
  std::string text = "this is not an HDF5 file at all, just some text padding it out to a few hundred bytes";
  while (text.size() < 600) text += text;
  err = io_error_of([&] { h5::File::open_image(text, "text.h5"); });
  EXPECT_TRUE(contains(err, "text.h5: expected a readable HDF5 file")) << err;
  fs::remove_all(dir);
}

TEST(Hdf5, CorruptVariableLengthStringsAreCaughtBeforeHdf5ReadsThem) {
  auto file = h5::File::create_in_memory("vlen.h5");
  file.root().write_string_attr("name", "hello");
  const std::string image = file.image();
  const size_t gcol = image.find(std::string("GCOL\x01\0\0\0", 8));
  ASSERT_NE(gcol, std::string::npos);
  const size_t size_field = gcol + 16 + 8;  // first object: index, refcount, reserved, then its size
  ASSERT_EQ(image[size_field], 5);
  EXPECT_EQ(h5::File::open_image(image, "vlen.h5").root().read_string_attr("name"), "hello");
  // An object size past the collection: HDF5 1.10 would copy out of bounds.
  std::string bad = image;
  bad[size_field + 5] = 0x40;
  std::string err = io_error_of([&] { h5::File::open_image(bad, "vlen.h5"); });
  EXPECT_TRUE(contains(err, "vlen.h5: expected intact global heap collections")) << err;
  // A size that no longer matches the string's length: HDF5 would overrun its buffer.
  bad = image;
  bad[size_field] = 6;
  auto root = h5::File::open_image(bad, "vlen.h5").root();
  err = io_error_of([&] { root.read_string_attr("name"); });
  EXPECT_TRUE(contains(err, "vlen.h5: / attribute 'name': expected element 0 to refer to stored string data")) << err;
}

TEST(Hdf5, RandomCorruptionNeverCrashes) {
  // Every outcome but a crash is acceptable: an IOError at open or on access, or garbage values.
  std::string image = sample_image();
  std::mt19937 rng(1234);
  int errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = image;
    std::uniform_int_distribution<size_t> pos(0, bad.size() - 1);
    for (int n = 0; n < 4; ++n) bad[pos(rng)] = static_cast<char>(rng());
    try {
      auto root = h5::File::open_image(bad, "fuzz.h5").root();
      auto vars = root.open_group("layers/dense/vars");
      for (const auto& name : vars.children()) vars.open_dataset(name).read();
      root.read_string_list_attr("layer_names");
    } catch (const k::Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}
