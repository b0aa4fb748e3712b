// TensorBoard event files: CRC-32C and byte-exact records (keras-formats.md section 7), and a
// fit whose event files are read back by the real tensorboard package (tests/callbacks/read_events.py)
// and checked value by value against the History and the model.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "callbacks/event_writer.h"
#include "callbacks/tensorboard.h"
#include "keras/keras.h"
#include "optimizers/schedules.h"
#include "optimizers/sgd.h"
#include "support/python.h"

using namespace keras;
namespace tfe = keras::callbacks::tfevents;
namespace fs = std::filesystem;
namespace L = keras::layers;

namespace {

std::string hex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("keras_tb_" + tag + "_" + std::to_string(getpid()));
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

// ---- framing and encoding ----

TEST(TfEvents, Crc32cCheckValueAndMask) {
  EXPECT_EQ(tfe::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(tfe::crc32c(""), 0u);
  const uint32_t c = tfe::crc32c("123456789");
  EXPECT_EQ(tfe::masked_crc32c("123456789"), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

TEST(TfEvents, FileVersionRecordMatchesSpecVector) {
  const std::string event = tfe::encode_file_version_event(1700000000.0);
  EXPECT_EQ(hex(event), "0900000040fc54d9411a0d627261696e2e4576656e743a32");
  const std::string header("\x18\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(tfe::masked_crc32c(header), 0x224b7fa3u);
  EXPECT_EQ(tfe::masked_crc32c(event), 0x9d8fedecu);
  EXPECT_EQ(hex(tfe::frame_record(event)), hex(header + le32(0x224b7fa3u) + event + le32(0x9d8fedecu)));
}

TEST(TfEvents, ScalarEventsMatchVectors) {
  // Legacy simple_value: the spec's vector.
  EXPECT_EQ(hex(tfe::encode_simple_scalar_event(1700000001.0, 3, "loss", 0.5f)),
            "0900004040fc54d94110032a0d0a0b0a046c6f7373150000003f");
  // TF2 tensor form; vectors serialised by tensorboard's own event_pb2 (protobuf), with and
  // without the scalars plugin metadata.
  EXPECT_EQ(hex(tfe::encode_tensor_scalar_event(1700000001.0, 3, "loss", 0.5f, true)),
            "0900004040fc54d94110032a230a210a046c6f7373420a080112002a040000003f"
            "4a0d0a090a077363616c6172732001");
  EXPECT_EQ(hex(tfe::encode_tensor_scalar_event(1700000001.0, 3, "loss", 0.5f, false)),
            "0900004040fc54d94110032a140a120a046c6f7373420a080112002a040000003f");
}

TEST(TfEvents, HistogramEventMatchesVector) {
  tfe::Histogram h{.min = -1, .max = 2, .num = 3, .sum = 1, .sum_squares = 6, .bucket_limit = {0.5, 2}, .bucket = {1, 2}};
  EXPECT_EQ(hex(tfe::encode_histogram_event(1700000002.0, 1, "w/histogram", h)),
            "0900008040fc54d94110012a620a600a0b772f686973746f6772616d2a5109000000000000f0bf110000000000000040190000"
            "00000000084021000000000000f03f2900000000000018403210000000000000e03f00000000000000403a10000000000000f0"
            "3f0000000000000040");
}

TEST(TfEvents, HistogramBuckets) {
  auto h = tfe::make_histogram({0.0, 1.0, 2.0, 3.0, NAN}, 3);
  EXPECT_EQ(h.num, 4);
  EXPECT_EQ(h.min, 0);
  EXPECT_EQ(h.max, 3);
  EXPECT_EQ(h.sum, 6);
  EXPECT_EQ(h.sum_squares, 14);
  EXPECT_EQ(h.bucket_limit, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(h.bucket, (std::vector<double>{1, 1, 2}));  // the maximum falls in the last bucket
  auto same = tfe::make_histogram({0.25, 0.25}, 30);
  EXPECT_EQ(same.bucket_limit, (std::vector<double>{0.25}));
  EXPECT_EQ(same.bucket, (std::vector<double>{2}));
  EXPECT_EQ(tfe::make_histogram({}, 30).num, 0);
  auto def = tfe::make_histogram({-1.0, 1.0});
  EXPECT_EQ(def.bucket.size(), 30u);
}

TEST(TfEvents, WriterFileNameAndFirstRecord) {
  TempDir dir("name");
  std::string path;
  {
    tfe::EventFileWriter w(dir.path.string());
    path = w.path();
    w.add_scalar("a", 1.0, 0);
  }
  const std::string name = fs::path(path).filename().string();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_NE(name.find("." + std::string(host) + "." + std::to_string(getpid()) + "."), std::string::npos) << name;
  EXPECT_EQ(name.substr(name.size() - 3), ".v2");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 12u + 24u + 4u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x18\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(bytes.substr(21, 13), "\x1a\x0d" "brain.Event");
  // A second writer in the same second and directory gets its own file.
  tfe::EventFileWriter w2(dir.path.string());
  EXPECT_NE(w2.path(), path);
}

TEST(TensorBoardCallback, RejectsBadOptions) {
  EXPECT_THROW(callbacks::TensorBoard({.update_freq = "sometimes"}), ValueError);
  EXPECT_THROW(callbacks::TensorBoard({.update_freq = 0}), ValueError);
  EXPECT_THROW(callbacks::TensorBoard({.histogram_freq = -1}), ValueError);
  EXPECT_EQ(callbacks::UpdateFreq("batch").batches(), 1);
}

// ---- the real reader ----

namespace {

// Records every training batch's logs with the global batch number (1-based), as TensorBoard steps them.
class BatchRecorder : public Callback {
 public:
  std::vector<std::pair<int64_t, Logs>> batches;
  void on_train_batch_end(int, const Logs& logs) override { batches.emplace_back(++count_, logs); }

 private:
  int64_t count_ = 0;
};

// Runs the reader script; sets `skip` (with the reason) when python or tensorboard is missing.
nlohmann::json read_with_tensorboard(const fs::path& log_dir, std::string& skip) {
  const fs::path script = fs::path(KERAS_SOURCE_DIR) / "tests/callbacks/read_events.py";
  const std::string out = test_support::run_python_file(script.string(), {log_dir.string()}, skip);
  return out.empty() ? nlohmann::json{} : nlohmann::json::parse(out);
}

// Checks one scalar tag: plugin metadata, the steps and every value (as float32, as written).
void expect_scalars(const nlohmann::json& run, const std::string& tag, const std::vector<int64_t>& steps,
                    const std::vector<double>& values) {
  SCOPED_TRACE(tag);
  ASSERT_TRUE(run["scalars"].contains(tag)) << run["scalars"].dump();
  const auto& s = run["scalars"][tag];
  EXPECT_EQ(s["plugin"], "scalars");
  EXPECT_EQ(s["data_class"], 1);
  ASSERT_EQ(s["events"].size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(s["events"][i][0].get<int64_t>(), steps[i]);
    EXPECT_EQ(s["events"][i][1].get<double>(), static_cast<double>(static_cast<float>(values[i]))) << "event " << i;
  }
}

}  // namespace

TEST(TensorBoardCallback, EventFilesReadByTensorBoard) {
  TempDir dir("fit");
  Tensor x = random::normal({64, 2}, 0, 1, 7);
  std::vector<int64_t> labels(64);
  auto xv = x.to_vector<float>();
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = xv[2 * i] + xv[2 * i + 1] > 0 ? 1 : 0;
  Tensor y = Tensor::from_vector(labels);

  auto model = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = 8, .activation = "relu"}), L::Dense({.units = 2, .activation = "softmax"})});
  // A decaying rate, so epoch_learning_rate must follow the optimizer, not a constant.
  auto schedule = std::make_shared<optimizers::schedules::ExponentialDecay>(0.1, 3, 0.5);
  model->compile({.optimizer = optimizers::SGD({.learning_rate = schedule}),
                  .loss = "sparse_categorical_crossentropy",
                  .metrics = {"accuracy"}});
  auto tb = callbacks::TensorBoard({.log_dir = dir.path.string(), .histogram_freq = 1, .update_freq = 2});
  auto recorder = std::make_shared<BatchRecorder>();
  const int epochs = 3;  // 48 training samples / 16 = 3 batches per epoch, 9 in all
  History h = model->fit(x, y, {.batch_size = 16, .epochs = epochs, .verbose = 0,
                                .callbacks = {recorder, tb}, .validation_split = 0.25, .shuffle = false});

  std::string skip;
  nlohmann::json got = read_with_tensorboard(dir.path, skip);
  if (!skip.empty()) GTEST_SKIP() << "TensorBoard reader check skipped: " << skip;
  ASSERT_TRUE(got.contains("runs"));
  const auto& runs = got["runs"];
  ASSERT_TRUE(runs.contains("train")) << runs.dump();
  ASSERT_TRUE(runs.contains("validation")) << runs.dump();
  for (const char* r : {"train", "validation"}) {
    ASSERT_EQ(runs[r]["files"].size(), 1u) << r;
    EXPECT_EQ(runs[r]["files"][0]["file_version"], "brain.Event:2");
  }
  const auto& train = runs["train"];
  const auto& val = runs["validation"];

  // Epoch scalars, train and validation, against the History.
  std::vector<int64_t> epoch_steps{0, 1, 2};
  std::set<std::string> expected_train, expected_val;
  for (const auto& [key, values] : h.history()) {
    ASSERT_EQ(values.size(), static_cast<size_t>(epochs)) << key;
    if (key.rfind("val_", 0) == 0) {
      expect_scalars(val, "epoch_" + key.substr(4), epoch_steps, values);
      expected_val.insert("epoch_" + key.substr(4));
    } else {
      expect_scalars(train, "epoch_" + key, epoch_steps, values);
      expected_train.insert("epoch_" + key);
    }
  }
  EXPECT_TRUE(expected_train.count("epoch_loss") && expected_train.count("epoch_accuracy"));
  EXPECT_TRUE(expected_val.count("epoch_loss") && expected_val.count("epoch_accuracy"));
  expect_scalars(train, "epoch_learning_rate", epoch_steps, {0.1 * 0.5, 0.1 * 0.25, 0.1 * 0.125});
  expected_train.insert("epoch_learning_rate");

  // Batch scalars every 2nd global batch, against the batch logs.
  ASSERT_EQ(recorder->batches.size(), 9u);
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<double>>> batch_expect;
  for (const auto& [step, logs] : recorder->batches) {
    if (step % 2 != 0) continue;
    for (const auto& [k, v] : logs.items()) {
      batch_expect["batch_" + k].first.push_back(step);
      batch_expect["batch_" + k].second.push_back(v);
    }
  }
  EXPECT_TRUE(batch_expect.count("batch_loss"));
  for (const auto& [tag, sv] : batch_expect) {
    expect_scalars(train, tag, sv.first, sv.second);
    expected_train.insert(tag);
  }

  // evaluation_<metric>_vs_iterations: the validation figures at the optimizer's step count.
  expect_scalars(val, "evaluation_loss_vs_iterations", {3, 6, 9}, h["val_loss"]);
  expect_scalars(val, "evaluation_accuracy_vs_iterations", {3, 6, 9}, h["val_accuracy"]);
  expected_val.insert({"evaluation_loss_vs_iterations", "evaluation_accuracy_vs_iterations"});

  // Nothing else was written.
  std::set<std::string> train_tags, val_tags;
  for (const auto& [tag, _] : train["scalars"].items()) train_tags.insert(tag);
  for (const auto& [tag, _] : val["scalars"].items()) val_tags.insert(tag);
  EXPECT_EQ(train_tags, expected_train);
  EXPECT_EQ(val_tags, expected_val);

  // Weight histograms, every epoch; the last one against the final weights.
  const auto weights = model->weights();
  ASSERT_EQ(train["histograms"].size(), weights.size());
  for (const Variable& v : weights) {
    const std::string tag = v.path() + "/histogram";
    SCOPED_TRACE(tag);
    ASSERT_TRUE(train["histograms"].contains(tag)) << train["histograms"].dump();
    const auto& hs = train["histograms"][tag];
    ASSERT_EQ(hs.size(), static_cast<size_t>(epochs));
    for (int e = 0; e < epochs; ++e) EXPECT_EQ(hs[static_cast<size_t>(e)]["step"], e);
    const auto& last = hs.back();
    const std::vector<double> w = v.value().to_vector<double>();
    double mn = w[0], mx = w[0], sum = 0, sq = 0;
    for (double a : w) mn = std::min(mn, a), mx = std::max(mx, a), sum += a, sq += a * a;
    EXPECT_EQ(last["num"].get<double>(), static_cast<double>(w.size()));
    EXPECT_EQ(last["min"].get<double>(), mn);
    EXPECT_EQ(last["max"].get<double>(), mx);
    EXPECT_NEAR(last["sum"].get<double>(), sum, 1e-12 * (1 + std::abs(sum)));
    EXPECT_NEAR(last["sum_squares"].get<double>(), sq, 1e-12 * (1 + sq));
    double count = 0;
    for (const auto& c : last["bucket"]) count += c.get<double>();
    EXPECT_EQ(count, static_cast<double>(w.size()));
    // As the histograms plugin shows it after migration: [left, right, count] from min to max.
    ASSERT_TRUE(train["histogram_buckets"].contains(tag));
    const auto& buckets = train["histogram_buckets"][tag].back()["buckets"];
    EXPECT_EQ(train["histogram_buckets"][tag].back()["plugin"], "histograms");
    ASSERT_FALSE(buckets.empty());
    EXPECT_EQ(buckets.front()[0].get<double>(), mn);
    EXPECT_EQ(buckets.back()[1].get<double>(), mx);
    double migrated = 0;
    for (const auto& b : buckets) migrated += b[2].get<double>();
    EXPECT_EQ(migrated, static_cast<double>(w.size()));
  }
  EXPECT_TRUE(val["histograms"].empty());
}

TEST(TensorBoardCallback, EpochOnlyWritesNoBatchScalarsAndNewFilesPerFit) {
  TempDir dir("epoch");
  Tensor x = random::normal({32, 3}, 0, 1, 3);
  Tensor y = random::normal({32, 1}, 0, 1, 4);
  auto model = std::make_shared<Sequential>(
      std::initializer_list<SequentialEntry>{L::Input({3}), L::Dense({.units = 1})});
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}), .loss = "mse"});
  auto tb = callbacks::TensorBoard({.log_dir = dir.path.string()});
  History h1 = model->fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {tb}});
  const std::string first = tb->train_event_file();
  History h2 = model->fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .callbacks = {tb}});
  EXPECT_NE(tb->train_event_file(), first);
  EXPECT_FALSE(fs::exists(dir.path / "validation"));  // no validation data, no validation run

  std::string skip;
  nlohmann::json got = read_with_tensorboard(dir.path, skip);
  if (!skip.empty()) GTEST_SKIP() << "TensorBoard reader check skipped: " << skip;
  const auto& train = got["runs"]["train"];
  EXPECT_EQ(train["files"].size(), 2u);
  std::set<std::string> tags;
  for (const auto& [tag, _] : train["scalars"].items()) tags.insert(tag);
  EXPECT_EQ(tags, (std::set<std::string>{"epoch_loss", "epoch_learning_rate"}));
  // Both fits' epochs land in the run: steps 0, 1 from the first fit, then 0 again.
  const auto& loss = train["scalars"]["epoch_loss"]["events"];
  ASSERT_GE(loss.size(), 1u);
  EXPECT_EQ(loss.back()[1].get<double>(), static_cast<double>(static_cast<float>(h2["loss"][0])));
}
