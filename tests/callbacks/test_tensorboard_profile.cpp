// TensorBoard's profile_batch (Keras semantics): which batches are profiled, where the trace goes
// (<log_dir>/train/plugins/profile/<run>/<host>.trace.json.gz, found by the profile plugin), a
// range cut by the end of training, a profile the user runs left alone, and the option's errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "callbacks/tensorboard.h"
#include "keras/keras.h"
#include "keras/profiler/trace_file.h"
#include "support/python.h"

using namespace keras;
namespace fs = std::filesystem;
namespace L = keras::layers;
using callbacks::ProfileBatch;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("keras_tbprof_" + tag + "_" + std::to_string(getpid()));
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Fits a small Dense model for `epochs` epochs of 4 batches with the callback.
void fit_with(const std::shared_ptr<callbacks::TensorBoardImpl>& tb, int epochs = 1) {
  Sequential model({L::Input({3}), L::Dense({.units = 4, .activation = "relu"}), L::Dense({.units = 2})});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  Tensor x = Tensor::ones({16, 3}), y = Tensor::zeros({16, 2});
  model.fit(x, y, {.batch_size = 4, .epochs = epochs, .verbose = 0, .callbacks = {tb}});
}

std::vector<std::pair<int, int64_t>> traced_steps() {
  std::vector<std::pair<int, int64_t>> out;
  for (const auto& e : profiler::last_trace().events)
    if (e.kind == profiler::EventKind::step) out.emplace_back(e.epoch, e.step);
  return out;
}

}  // namespace

TEST(TensorBoardProfile, ProfileBatchTakesKerasForms) {
  ProfileBatch off;
  EXPECT_FALSE(off.enabled());
  ProfileBatch one = 3;
  EXPECT_EQ(one.start(), 3);
  EXPECT_EQ(one.stop(), 3);
  ProfileBatch range = {2, 5};
  EXPECT_EQ(range.start(), 2);
  EXPECT_EQ(range.stop(), 5);
  ProfileBatch text = "4,6";
  EXPECT_EQ(text.start(), 4);
  EXPECT_EQ(text.stop(), 6);
  EXPECT_EQ(ProfileBatch("7").stop(), 7);
  EXPECT_THROW(ProfileBatch(-1), ValueError);
  EXPECT_THROW(ProfileBatch(0, 2), ValueError);
  EXPECT_THROW(ProfileBatch(3, 2), ValueError);
  EXPECT_THROW(ProfileBatch("2-3"), ValueError);
  try {
    callbacks::TensorBoard({.log_dir = "x", .profile_batch = {5, 1}});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("TensorBoard profile_batch: expected a non-negative integer or a pair"),
              std::string::npos) << e.what();
  }
}

TEST(TensorBoardProfile, ARangeProfilesThoseBatchesIntoTheTrainRun) {
  TempDir dir("range");
  auto tb = callbacks::TensorBoard({.log_dir = dir.path.string(), .profile_batch = {2, 3}});
  fit_with(tb);
  EXPECT_FALSE(profiler::running());
  const std::string file = tb->profile_file();
  ASSERT_FALSE(file.empty());
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(fs::path(file).parent_path().parent_path(), dir.path / "train" / "plugins" / "profile");
  EXPECT_EQ(profiler::last_trace().path, file);
  // Batches 2 and 3 (1-based, as Keras counts) are steps 1 and 2 of the epoch; the profile starts
  // inside step 1's on_train_batch_begin and stops inside step 2's on_train_batch_end.
  EXPECT_EQ(traced_steps(), (std::vector<std::pair<int, int64_t>>{{0, 1}, {0, 2}}));
  bool truncated_last = false;
  for (const auto& e : profiler::last_trace().events)
    if (e.kind == profiler::EventKind::step && e.step == 2) truncated_last = e.truncated;
  EXPECT_TRUE(truncated_last);

  std::string skip;
  const std::string out = test_support::run_python_file(
      (fs::path(KERAS_SOURCE_DIR) / "tests/keras/profiler/read_trace.py").string(), {"plugin", dir.path.string()},
      skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  const auto report = nlohmann::json::parse(out);
  const std::string run = "train/" + profiler::last_trace().run;
  ASSERT_TRUE(report["runs"].contains(run)) << report.dump();
  const std::string host = profiler::host_name();
  EXPECT_EQ(report["runs"][run]["files"], nlohmann::json::array({host + ".trace.json.gz", host + ".xplane.pb"}));
}

TEST(TensorBoardProfile, BatchesCountAcrossEpochsAndTheEndOfTrainingStopsARange) {
  TempDir dir("epochs");
  auto tb = callbacks::TensorBoard({.log_dir = dir.path.string(), .profile_batch = {6, 100}});
  fit_with(tb, 2);
  EXPECT_FALSE(profiler::running());
  ASSERT_FALSE(tb->profile_file().empty());
  // Global batch 6 is epoch 1's second batch; training ends after global batch 8.
  EXPECT_EQ(traced_steps(), (std::vector<std::pair<int, int64_t>>{{1, 1}, {1, 2}, {1, 3}}));
}

TEST(TensorBoardProfile, OffOrOutOfRangeWritesNothing) {
  TempDir dir("off");
  auto off = callbacks::TensorBoard({.log_dir = dir.path.string()});
  fit_with(off);
  auto late = callbacks::TensorBoard({.log_dir = dir.path.string(), .profile_batch = 50});
  fit_with(late);
  EXPECT_FALSE(fs::exists(dir.path / "train" / "plugins"));
  EXPECT_TRUE(off->profile_file().empty());
  EXPECT_TRUE(late->profile_file().empty());
}

TEST(TensorBoardProfile, AProfileTheUserRunsIsLeftRunning) {
  TempDir dir("user");
  profiler::start((dir.path / "mine").string());
  auto tb = callbacks::TensorBoard({.log_dir = dir.path.string(), .profile_batch = 1});
  fit_with(tb);
  EXPECT_TRUE(profiler::running());
  EXPECT_TRUE(tb->profile_file().empty());
  profiler::stop();
  EXPECT_EQ(traced_steps().size(), 4u);
}
