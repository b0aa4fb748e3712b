// Image readers: resize_image against tf.image.resize, image_dataset_from_directory (labels from
// sorted subfolders, seeded shuffle and validation split, listing errors as IOError), JPEG and
// PNG decoding; a corrupt file is named in the error and leaves no decoding thread behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "keras/data/readers.h"
#include "support/reader_files.h"
#include "support/threads.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>

using namespace keras;
using namespace keras::data;
using keras::testing::back_to;
using keras::testing::expect_error;
using keras::testing::Readers;
using keras::testing::thread_count;
namespace fs = std::filesystem;

TEST_F(Readers, ResizeMatchesTfImageResize) {
  Tensor img = Tensor::from_vector<float>({0, 1, 2, 3}, {2, 2, 1});
  Tensor up = resize_image(img, 4, 4);
  // tf.image.resize([[0, 1], [2, 3]], (4, 4), "bilinear") (half-pixel centres).
  EXPECT_EQ(up.to_vector<float>(), (std::vector<float>{0, 0.25f, 0.75f, 1, 0.5f, 0.75f, 1.25f, 1.5f, 1.5f, 1.75f, 2.25f,
                                                       2.5f, 2, 2.25f, 2.75f, 3}));
  Tensor big = Tensor::arange(0, 16).view({4, 4, 1});
  EXPECT_EQ(resize_image(big, 2, 2).to_vector<float>(), (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));
  EXPECT_EQ(resize_image(big, 2, 2, "nearest").to_vector<float>(), (std::vector<float>{5, 7, 13, 15}));
  EXPECT_EQ(resize_image(big.view({1, 4, 4, 1}), 4, 4).shape(), (Shape{1, 4, 4, 1}));
  EXPECT_THROW(resize_image(big, 2, 2, "bicubic"), ValueError);
}

namespace {
// A w x h RGB PNG filled with one colour.
void write_png(const fs::path& p, int w, int h, std::array<unsigned char, 3> rgb) {
  fs::create_directories(p.parent_path());
  std::vector<unsigned char> px(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < px.size(); ++i) px[i] = rgb[i % 3];
  ASSERT_TRUE(stbi_write_png(p.c_str(), w, h, 3, px.data(), w * 3));
}
}  // namespace

TEST_F(Readers, ImageDirectoryLabelsFromSortedSubfolders) {
  // Created out of alphabetical order; labels follow the sorted folder names.
  write_png(dir / "zebra" / "z1.png", 6, 4, {200, 10, 10});
  write_png(dir / "zebra" / "nested" / "z2.png", 3, 3, {200, 10, 10});
  write_png(dir / "ant" / "a1.png", 5, 5, {0, 50, 100});
  write_png(dir / "cat" / "c1.png", 2, 7, {1, 2, 3});
  file("cat/notes.txt", "not an image");
  ImageDirectory d = image_dataset_from_directory(dir.string(), {.batch_size = 2, .height = 4, .width = 3, .shuffle = false});
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"ant", "cat", "zebra"}));
  ASSERT_EQ(d.file_paths.size(), 4u);
  EXPECT_EQ(d.dataset.cardinality(), 2);
  std::vector<int32_t> labels;
  std::vector<float> reds;
  for (const Element& e : d.dataset.iterator()) {
    EXPECT_EQ(e[0].shape(), (Shape{e[0].dim(0), 4, 3, 3}));
    EXPECT_EQ(e[1].dtype(), DType::int32);
    for (int64_t i = 0; i < e[0].dim(0); ++i) {
      labels.push_back(static_cast<int32_t>(element_as_double(e[1], i)));
      reds.push_back(static_cast<float>(element_as_double(e[0], i * 36)));
      // A flat colour stays flat through bilinear resizing.
      EXPECT_EQ(element_as_double(e[0], i * 36 + 35), element_as_double(e[0], i * 36 + 2));
    }
  }
  EXPECT_EQ(labels, (std::vector<int32_t>{0, 1, 2, 2}));
  EXPECT_EQ(reds, (std::vector<float>{0, 1, 200, 200}));

  auto cat = image_dataset_from_directory(dir.string(), {.label_mode = "categorical", .color_mode = "grayscale",
                                                         .batch_size = 0, .height = 2, .width = 2, .shuffle = false});
  auto it = cat.dataset.iterator();
  auto first = it.next();
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)[0].shape(), (Shape{2, 2, 1}));
  EXPECT_EQ((*first)[1].to_vector<float>(), (std::vector<float>{1, 0, 0}));
  EXPECT_THROW(image_dataset_from_directory(dir.string(), {.label_mode = "binary"}), ValueError);
}

TEST_F(Readers, ImageDirectoryShuffleAndValidationSplit) {
  for (int i = 0; i < 6; ++i) write_png(dir / (i % 2 ? "b" : "a") / (std::to_string(i) + ".png"), 2, 2, {uint8_t(i), 0, 0});
  ImageDirectoryOptions o{.batch_size = 0, .height = 2, .width = 2, .seed = 9, .validation_split = 0.5, .subset = "training"};
  auto train = image_dataset_from_directory(dir.string(), o);
  o.subset = "validation";
  auto val = image_dataset_from_directory(dir.string(), o);
  EXPECT_EQ(train.file_paths.size(), 3u);
  EXPECT_EQ(val.file_paths.size(), 3u);
  std::set<std::string> all(train.file_paths.begin(), train.file_paths.end());
  all.insert(val.file_paths.begin(), val.file_paths.end());
  EXPECT_EQ(all.size(), 6u);  // the subsets partition the files
  auto reds = [](const Dataset& ds) {
    std::vector<double> v;
    for (const Element& e : ds.iterator()) v.push_back(element_as_double(e[0], 0));
    return v;
  };
  auto a = reds(train.dataset);
  EXPECT_EQ(a, reds(image_dataset_from_directory(dir.string(), {.batch_size = 0, .height = 2, .width = 2, .seed = 9,
                                                                 .validation_split = 0.5, .subset = "training"})
                        .dataset));  // same seed, same order
  o.seed.reset();
  EXPECT_THROW(image_dataset_from_directory(dir.string(), o), ValueError);
  EXPECT_THROW(image_dataset_from_directory((dir / "a" / "0.png").string()), IOError);
  fs::create_directories(dir / "empty");
  EXPECT_THROW(image_dataset_from_directory((dir / "empty").string()), ValueError);
}

TEST_F(Readers, ImageDirectoryListingErrorsAreIOError) {
  // A symlink to itself fails to stat (ELOOP) even for root, whom permissions do not stop.
  fs::create_symlink("loop", dir / "loop");
  const std::string loop = (dir / "loop").string();
  expect_error<IOError>([&] { image_dataset_from_directory(loop); }, {loop, "listed"});

  write_png(dir / "classes" / "cat" / "ok.png", 2, 2, {1, 2, 3});
  fs::create_symlink("dog", dir / "classes" / "dog");  // a class folder that can't be stat'ed
  const std::string dog = (dir / "classes" / "dog").string();
  expect_error<IOError>([&] { image_dataset_from_directory((dir / "classes").string()); }, {dog, "listed"});

  write_png(dir / "files" / "cat" / "ok.png", 2, 2, {1, 2, 3});
  fs::create_symlink("bad.png", dir / "files" / "cat" / "bad.png");  // an image that can't be stat'ed
  const std::string bad = (dir / "files" / "cat" / "bad.png").string();
  expect_error<IOError>([&] { image_dataset_from_directory((dir / "files").string()); }, {bad, "listed"});
  expect_error<IOError>([&] { image_dataset_from_directory((dir / "files").string(), {.labels = "none"}); }, {bad});
  fs::create_symlink("notes.txt", dir / "files" / "cat" / "notes.txt");  // not an image: ignored
  fs::remove(dir / "files" / "cat" / "bad.png");
  EXPECT_EQ(image_dataset_from_directory((dir / "files").string()).file_paths.size(), 1u);

  if (::geteuid() != 0) {  // root reads folders without read permission
    write_png(dir / "perm" / "cat" / "ok.png", 2, 2, {1, 2, 3});
    write_png(dir / "perm" / "dog" / "ok.png", 2, 2, {1, 2, 3});
    fs::permissions(dir / "perm" / "dog", fs::perms::none);
    const std::string locked = (dir / "perm" / "dog").string();
    expect_error<IOError>([&] { image_dataset_from_directory((dir / "perm").string()); }, {locked, "listed"});
    fs::permissions(dir / "perm" / "dog", fs::perms::owner_all);  // so that TearDown can remove it
  }
}

TEST_F(Readers, JpegDecodes) {
  std::vector<unsigned char> px(16 * 16 * 3, 128);
  auto p = (dir / "g.jpg").string();
  ASSERT_TRUE(stbi_write_jpg(p.c_str(), 16, 16, 3, px.data(), 95));
  Tensor t = load_image(p);
  EXPECT_EQ(t.shape(), (Shape{16, 16, 3}));
  EXPECT_NEAR(element_as_double(t, 100), 128, 3);
}

TEST_F(Readers, CorruptPngNamesTheFileAndStopsThreads) {
  write_png(dir / "ok" / "good.png", 4, 4, {9, 9, 9});
  write_png(dir / "ok" / "trunc.png", 8, 8, {1, 2, 3});
  auto trunc = (dir / "ok" / "trunc.png").string();
  std::string bytes = read(trunc);
  file("ok/trunc.png", bytes.substr(0, bytes.size() / 2));
  auto garbage = file("ok/zz_garbage.png", std::string("\x89PNG\r\n\x1a\n", 8) + "this is not a PNG body at all");
  expect_error<IOError>([&] { load_image(trunc); }, {trunc});
  expect_error<IOError>([&] { load_image(garbage); }, {garbage, "undecodable"});
  expect_error<IOError>([&] { load_image((dir / "none.png").string()); }, {"none.png"});

  const int baseline = thread_count();
  auto d = image_dataset_from_directory(dir.string(), {.batch_size = 1, .height = 4, .width = 4, .shuffle = false,
                                                       .num_parallel_calls = 2});
  {
    auto it = d.dataset.iterator();
    auto first = it.next();  // good.png decodes
    ASSERT_TRUE(first);
    expect_error<IOError>([&] { it.next(); }, {trunc});
    EXPECT_FALSE(it.next().has_value());
  }
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
}
