// keras/utils/file_util.h: the crash-safe write that every saver goes through (DESIGN.md
// decision 10) and the whole-file read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "backend/errors.h"
#include "keras/utils/file_util.h"

namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("keras_file_util_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST(FileUtil, FailedWriteLeavesThePreviousFile) {
  fs::path dir = temp_dir("atomic");
  const std::string file = (dir / "w.bin").string();
  keras::write_file_atomic(file, "first");
  keras::write_file_atomic(file, "second");
  EXPECT_EQ(keras::read_file_bytes(file), "second");
  EXPECT_THROW(keras::write_file_atomic((dir / "no_such_dir" / "w.bin").string(), "third"), keras::IOError);
  // A directory where the file should be: the write fails, the directory stays as it was.
  fs::create_directories(dir / "taken");
  EXPECT_THROW(keras::write_file_atomic((dir / "taken").string(), "x"), keras::IOError);
  EXPECT_TRUE(fs::is_directory(dir / "taken"));
  EXPECT_EQ(keras::read_file_bytes(file), "second");
  for (const auto& e : fs::directory_iterator(dir))  // no temporary file left behind
    EXPECT_TRUE(e.path().filename() == "w.bin" || e.path().filename() == "taken") << e.path();
  fs::remove_all(dir);
}

TEST(FileUtil, ReadNamesAMissingFileOrADirectory) {
  fs::path dir = temp_dir("read");
  try {
    keras::read_file_bytes((dir / "missing.bin").string());
    FAIL();
  } catch (const keras::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW(keras::read_file_bytes(dir.string()), keras::IOError);
  fs::remove_all(dir);
}
