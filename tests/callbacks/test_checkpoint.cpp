// Saving during training: ModelCheckpoint (file names, best-only, save_freq, atomic saves) and
// BackupAndRestore (its Keras 3 files, restore in process, refused backups, and a run killed with
// SIGKILL then restarted).
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "callbacks/callbacks.h"
#include "keras/keras.h"
#include "keras/saving/inspect.h"
#include "support/python.h"

extern char** environ;

using namespace keras;
namespace cb = keras::callbacks;
namespace L = keras::layers;
namespace fs = std::filesystem;

namespace {
std::pair<Tensor, Tensor> toy_data(int64_t n, uint64_t seed) {
  Tensor x = random::normal({n, 2}, 0, 1, seed);
  std::vector<int64_t> y(static_cast<size_t>(n));
  auto xv = x.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = xv[2 * i] + xv[2 * i + 1] > 0 ? 1 : 0;
  return {x, Tensor::from_vector(y)};
}

std::shared_ptr<Sequential> compiled_mlp(int units = 8) {
  auto m = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = units, .activation = "relu"}), L::Dense({.units = 2, .activation = "softmax"})});
  m->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  m->build_for({-1, 2});
  return m;
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("keras_ckpt_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void dump(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<std::vector<float>> values_of(const Model& m) {
  std::vector<std::vector<float>> out;
  for (const auto& v : m.weights()) out.push_back(v.value().to_vector<float>());
  return out;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const IOError& e) {
    return e.what();
  }
  return "<no IOError>";
}
}  // namespace

// ---------------------------------------------------------------- ModelCheckpoint

TEST(ModelCheckpoint, FormatsPathsAndSavesEachEpoch) {
  fs::path dir = temp_dir("mc");
  auto m = compiled_mlp();
  auto [x, y] = toy_data(40, 7);
  auto mc = cb::ModelCheckpoint({.filepath = (dir / "sub" / "ckpt-{epoch:02d}-{val_loss:.2f}.keras").string()});
  m->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {mc}, .validation_split = 0.2});
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir / "sub")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].rfind("ckpt-01-", 0), 0u);
  EXPECT_EQ(names[1].rfind("ckpt-02-", 0), 0u);
  EXPECT_EQ(mc->last_saved(), (dir / "sub" / names[1]).string());
  auto fresh = keras::load_model(mc->last_saved());
  EXPECT_EQ(values_of(*fresh), values_of(*m));
  EXPECT_TRUE(fresh->compiled());
  // Weights only: a .weights.h5 file; a suffix the default savers cannot write is refused.
  auto wo = cb::ModelCheckpoint({.filepath = (dir / "w{epoch}.weights.h5").string(), .save_weights_only = true});
  m->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {wo}});
  auto fresh2 = compiled_mlp();
  fresh2->load_weights(wo->last_saved());
  EXPECT_EQ(values_of(*fresh2), values_of(*m));
  EXPECT_THROW(cb::ModelCheckpoint({.filepath = (dir / "x.bin").string()}), ValueError);
  EXPECT_THROW(cb::ModelCheckpoint({.filepath = (dir / "x.keras").string(), .save_weights_only = true}), ValueError);
  // The path formatting itself.
  cb::ModelCheckpointImpl p({.filepath = "w.{epoch:02d}-{val_loss:.2f}-{batch}.keras"});
  Logs l;
  l.set("val_loss", 0.4123);
  EXPECT_EQ(p.file_path(2, 4, l), "w.03-0.41-5.keras");
  EXPECT_THROW(p.file_path(2, -1, l), ValueError);  // {batch} unknown at epoch level
  fs::remove_all(dir);
}

TEST(ModelCheckpoint, SaveBestOnlyAndSaveFreq) {
  auto m = compiled_mlp();
  std::vector<std::string> saved;
  auto saver = [&](Model&, const std::string& path) { std::ofstream(path) << "x"; saved.push_back(path); };
  fs::path dir = temp_dir("best");
  cb::ModelCheckpointImpl best({.filepath = (dir / "b{epoch}.keras").string(), .save_best_only = true,
                                .save_model = saver});
  best.set_model(m.get());
  best.on_train_begin({});
  double losses[] = {1.0, 1.2, 1.0, 0.8, 0.9};
  for (int e = 0; e < 5; ++e) {
    Logs l;
    l.set("val_loss", losses[e]);
    best.on_epoch_end(e, l);
  }
  ASSERT_EQ(saved.size(), 2u);  // epochs 0 and 3 (strict improvement only)
  EXPECT_TRUE(fs::exists(dir / "b1.keras"));
  EXPECT_TRUE(fs::exists(dir / "b4.keras"));
  EXPECT_FALSE(fs::exists(dir / "b3.keras"));
  EXPECT_DOUBLE_EQ(best.best(), 0.8);

  // initial_value_threshold; missing monitor -> skip with a warning; max via accuracy direction.
  saved.clear();
  cb::ModelCheckpointImpl thr({.filepath = (dir / "t.keras").string(), .save_best_only = true,
                               .initial_value_threshold = 0.5, .save_model = saver});
  thr.set_model(m.get());
  Logs l;
  l.set("val_loss", 0.7);
  thr.on_epoch_end(0, l);
  Logs other;
  other.set("loss", 0.1);
  thr.on_epoch_end(1, other);
  EXPECT_TRUE(saved.empty());

  // Every 3 batches, counted across epochs as Keras does.
  saved.clear();
  cb::ModelCheckpointImpl freq({.filepath = (dir / "f{epoch}-{batch}.keras").string(), .save_freq = 3,
                                .save_model = saver});
  freq.set_model(m.get());
  freq.on_train_begin({});
  for (int e = 0; e < 2; ++e) {
    freq.on_epoch_begin(e, {});
    for (int b = 0; b < 4; ++b) freq.on_train_batch_end(b, {});
    Logs el;
    freq.on_epoch_end(e, el);
  }
  ASSERT_EQ(saved.size(), 2u);  // the saver writes a temporary sibling, renamed into place
  EXPECT_TRUE(fs::exists(dir / "f1-3.keras"));
  EXPECT_TRUE(fs::exists(dir / "f2-2.keras"));
  EXPECT_THROW(cb::ModelCheckpoint({.filepath = "x", .save_freq = std::string("step")}), ValueError);
  EXPECT_THROW(cb::ModelCheckpoint({.filepath = "x", .save_freq = int64_t{0}}), ValueError);
  fs::remove_all(dir);
}

TEST(ModelCheckpoint, FailingSaverKeepsThePreviousCheckpoint) {
  fs::path dir = temp_dir("keep");
  auto m = compiled_mlp();
  std::string target = (dir / "m.keras").string();
  dump(target, "previous");
  cb::ModelCheckpointImpl mc({.filepath = target, .save_model = [](Model&, const std::string& p) {
                                std::ofstream(p) << "half";
                                throw IOError("disk full");
                              }});
  mc.set_model(m.get());
  Logs l;
  EXPECT_THROW(mc.on_epoch_end(0, l), IOError);
  EXPECT_EQ(slurp(target), "previous");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) (void)e, ++files;
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- BackupAndRestore

namespace {
// Whether fit can resume at a callback-chosen epoch (Model::resume_epoch, the trainer's hook).

constexpr int kEpochs = 4;

// One training run of the resumption scenario, from a fixed seed. It kills itself after batch
// `kill_batch` of epoch `kill_epoch`, or inside the backup's save when the weights file named
// `kill_in_save` has just been written (before the metadata that would commit it).
std::shared_ptr<Sequential> resumable_run(const std::string& backup_dir, int kill_epoch, int kill_batch,
                                          const std::string& kill_in_save = "") {
  set_random_seed(1234);
  auto m = compiled_mlp();
  auto [x, y] = toy_data(64, 99);
  std::vector<CallbackPtr> cbs;
  auto saver = [kill_in_save](Model& model, const std::string& path) {
    save_weights(model, path);
    if (!kill_in_save.empty() && fs::path(path).filename() == kill_in_save) ::raise(SIGKILL);
  };
  if (!backup_dir.empty()) cbs.push_back(cb::BackupAndRestore({.backup_dir = backup_dir, .save_weights = saver}));
  int epoch_now = 0;
  cbs.push_back(cb::LambdaCallback({.on_epoch_begin = [&](int e, const Logs&) { epoch_now = e; },
                                    .on_train_batch_end = [&](int b, const Logs&) {
                                      if (epoch_now == kill_epoch && b == kill_batch) ::raise(SIGKILL);
                                    }}));
  m->fit(x, y, {.batch_size = 16, .epochs = kEpochs, .verbose = 0, .callbacks = cbs});
  return m;
}

// kill: "batch" (mid-epoch), "save" (inside the third backup), anything else: none.
int run_worker(const std::string& dir, const std::string& out, const std::string& kill) {
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> env_strings{"KERAS_BR_DIR=" + dir, "KERAS_BR_OUT=" + out, "KERAS_BR_KILL=" + kill};
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  char* argv[] = {exe.data(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}
}  // namespace

namespace {
// Every optimizer variable's values, by position.
std::vector<std::vector<double>> optimizer_values_of(const Model& m) {
  std::vector<std::vector<double>> out;
  for (const auto& v : m.optimizer()->variables()) out.push_back(v.value().to_vector<double>());
  return out;
}
}  // namespace

TEST(BackupAndRestore, RestoresWeightsOptimizerAndEpoch) {
  fs::path dir = temp_dir("br");
  auto m = compiled_mlp();
  auto [x, y] = toy_data(32, 8);
  auto br = cb::BackupAndRestore({.backup_dir = (dir / "b").string(), .delete_checkpoint = false});
  m->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {br}});
  // Keras 3's files: the training position, the weights of the generation it names (the earlier
  // generation is gone), and latest.weights.h5, the same file for Keras.
  ASSERT_TRUE(fs::exists(dir / "b" / "training_metadata.json"));
  auto state = nlohmann::json::parse(slurp(dir / "b" / "training_metadata.json"));
  EXPECT_EQ(state["epoch"], 2);
  EXPECT_EQ(state["batch"], 0);
  EXPECT_EQ(state["weights"], "weights-2.weights.h5");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "b")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"latest.weights.h5", "training_metadata.json", "weights-2.weights.h5"}));
  EXPECT_EQ(slurp(dir / "b" / "latest.weights.h5"), slurp(dir / "b" / "weights-2.weights.h5"));
  // The weights file is a Keras 3 weights tree with the optimizer state, as keras-inspect sees it.
  auto described = inspect_file((dir / "b" / "weights-2.weights.h5").string());
  EXPECT_EQ(described["kind"], "weights.h5");
  EXPECT_EQ(described["weights"].size(), m->weights().size());
  EXPECT_EQ(described["optimizer"]["variables"].size(), m->optimizer()->variables().size());

  auto fresh = compiled_mlp();
  auto br2 = cb::BackupAndRestoreImpl({.backup_dir = (dir / "b").string(), .delete_checkpoint = true});
  br2.set_model(fresh.get());
  br2.on_train_begin({});
  EXPECT_EQ(br2.restored_epoch(), 2);
  EXPECT_EQ(fresh->resume_epoch, 2);
  EXPECT_EQ(values_of(*fresh), values_of(*m));
  EXPECT_EQ(fresh->optimizer()->iterations(), m->optimizer()->iterations());
  EXPECT_EQ(optimizer_values_of(*fresh), optimizer_values_of(*m));
  br2.on_train_end({});
  EXPECT_FALSE(fs::exists(dir / "b"));
  fs::remove_all(dir);
}

TEST(BackupAndRestore, BadBackupsAreIOErrorsThatChangeNothing) {
  fs::path dir = temp_dir("br_bad");
  auto expect_refused = [&](const std::string& backup, const std::string& what) {
    auto model = compiled_mlp();
    model->optimizer()->build(model->trainable_weights());
    auto before = values_of(*model);
    auto optimizer_before = optimizer_values_of(*model);
    auto br = cb::BackupAndRestoreImpl({.backup_dir = (dir / backup).string()});
    br.set_model(model.get());
    std::string msg = error_of([&] { br.on_train_begin({}); });
    EXPECT_NE(msg.find(what), std::string::npos) << backup << ": " << msg;
    EXPECT_EQ(values_of(*model), before) << backup;
    EXPECT_EQ(optimizer_values_of(*model), optimizer_before) << backup;
    EXPECT_EQ(br.restored_epoch(), -1) << backup;
    EXPECT_FALSE(model->resume_epoch.has_value()) << backup;
  };
  // Metadata that does not parse, lacks a key, or points out of the backup directory.
  fs::create_directories(dir / "json");
  dump(dir / "json" / "training_metadata.json", "{\"epoch\": ");
  expect_refused("json", "training_metadata.json");
  fs::create_directories(dir / "keys");
  dump(dir / "keys" / "training_metadata.json", R"({"batch": 0})");
  expect_refused("keys", "training_metadata.json");
  fs::create_directories(dir / "negative");
  dump(dir / "negative" / "training_metadata.json", R"({"epoch": -3, "batch": 0, "generation": 1, "weights": "weights-1.weights.h5"})");
  expect_refused("negative", "expected epoch >= 0, got -3");
  fs::create_directories(dir / "mixed");
  dump(dir / "mixed" / "training_metadata.json", R"({"epoch": 1, "batch": 0, "generation": 2, "weights": "weights-1.weights.h5"})");
  expect_refused("mixed", "generation 2 and weights 'weights-1.weights.h5'");
  // Keras's own metadata without its latest.weights.h5.
  fs::create_directories(dir / "keras");
  dump(dir / "keras" / "training_metadata.json", R"({"epoch": 1, "batch": 0})");
  expect_refused("keras", "latest.weights.h5");
  fs::create_directories(dir / "escape");
  dump(dir / "escape" / "training_metadata.json", R"({"epoch": 1, "batch": 0, "generation": 1, "weights": "../w.weights.h5"})");
  expect_refused("escape", "weights '../w.weights.h5'");

  // A backup of a wider model: the shape mismatch names the file; nothing is loaded.
  auto wide = compiled_mlp(16);
  auto [x, y] = toy_data(32, 8);
  wide->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0,
                   .callbacks = {cb::BackupAndRestore({.backup_dir = (dir / "wide").string(), .delete_checkpoint = false})}});
  expect_refused("wide", "weights-1.weights.h5");

  // A backup of a model with one layer less: the layer it lacks is named.
  auto shallow = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = 8, .activation = "relu"})});
  shallow->build_for({-1, 2});
  cb::BackupAndRestoreImpl writer({.backup_dir = (dir / "shallow").string(), .delete_checkpoint = false});
  writer.set_model(shallow.get());
  Logs logs;
  writer.on_epoch_end(0, logs);
  expect_refused("shallow", "/layers/dense_1/vars");

  // A backup of the same architecture, uncompiled: every layer fits, but the strict load refuses
  // to leave the compiled model's optimizer state as it is.
  auto uncompiled = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = 8, .activation = "relu"}), L::Dense({.units = 2, .activation = "softmax"})});
  uncompiled->build_for({-1, 2});
  cb::BackupAndRestoreImpl writer2({.backup_dir = (dir / "noopt").string(), .delete_checkpoint = false});
  writer2.set_model(uncompiled.get());
  writer2.on_epoch_end(0, logs);
  expect_refused("noopt", "unmatched weights");

  // A truncated weights file.
  fs::copy(dir / "wide", dir / "cut");
  std::string bytes = slurp(dir / "cut" / "weights-1.weights.h5");
  dump(dir / "cut" / "weights-1.weights.h5", bytes.substr(0, bytes.size() / 2));
  expect_refused("cut", "weights-1.weights.h5");
  fs::remove_all(dir);
}

TEST(BackupAndRestore, ReadsAKeras3FolderAndClearsLeftovers) {
  fs::path dir = temp_dir("br_keras");
  // What Keras 3 leaves: {"epoch", "batch"} and latest.weights.h5; plus the leftovers of a run of
  // ours killed mid-save (an older generation, a temporary file).
  auto trained = compiled_mlp();
  auto [x, y] = toy_data(32, 8);
  trained->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0});
  save_weights(*trained, (dir / "latest.weights.h5").string());
  dump(dir / "training_metadata.json", R"({"epoch": 3, "batch": 1})");
  dump(dir / "weights-7.weights.h5", "old");
  dump(dir / "weights-8.weights.h5.tmp123.0", "partial");
  // No metadata yet beside a weights file: a fresh start that touches nothing.
  fs::create_directories(dir / "none");
  dump(dir / "none" / "weights-1.weights.h5", "x");
  auto fresh = compiled_mlp();
  auto before = values_of(*fresh);
  cb::BackupAndRestoreImpl none({.backup_dir = (dir / "none").string()});
  none.set_model(fresh.get());
  none.on_train_begin({});
  EXPECT_EQ(none.restored_epoch(), -1);
  EXPECT_EQ(values_of(*fresh), before);
  fs::remove_all(dir / "none");

  cb::BackupAndRestoreImpl br({.backup_dir = dir.string(), .delete_checkpoint = false});
  br.set_model(fresh.get());
  br.on_train_begin({});
  EXPECT_EQ(br.restored_epoch(), 3);
  EXPECT_EQ(values_of(*fresh), values_of(*trained));
  EXPECT_EQ(optimizer_values_of(*fresh), optimizer_values_of(*trained));
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"latest.weights.h5", "training_metadata.json"}));
  // The next backup is ours, generation 1, and latest.weights.h5 follows it.
  Logs logs;
  br.on_epoch_end(3, logs);
  auto state = nlohmann::json::parse(slurp(dir / "training_metadata.json"));
  EXPECT_EQ(state["epoch"], 4);
  EXPECT_EQ(state["weights"], "weights-1.weights.h5");
  EXPECT_EQ(slurp(dir / "latest.weights.h5"), slurp(dir / "weights-1.weights.h5"));
  fs::remove_all(dir);
}

// h5py (the test environment's Python, scripts/setup.sh) reads a backup like any Keras weights file.
TEST(BackupAndRestore, H5pyReadsTheBackup) {
  fs::path dir = temp_dir("br_h5py");
  auto m = compiled_mlp();
  auto [x, y] = toy_data(32, 8);
  m->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0,
                .callbacks = {cb::BackupAndRestore({.backup_dir = dir.string(), .delete_checkpoint = false})}});
  std::string skip;
  const std::string listing = test_support::run_python(
      "import h5py, sys\n"
      "f = h5py.File(sys.argv[1], 'r')\n"
      "f.visititems(lambda name, obj: print(name, obj.shape) if isinstance(obj, h5py.Dataset) else None)\n",
      {(dir / "weights-1.weights.h5").string()}, {"h5py"}, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_NE(listing.find("layers/dense/vars/0 (2, 8)"), std::string::npos) << listing;
  EXPECT_NE(listing.find("layers/dense_1/vars/1 (2,)"), std::string::npos) << listing;
  EXPECT_NE(listing.find("optimizer/vars/0 ()"), std::string::npos) << listing;
  fs::remove_all(dir);
}

// The child process of KillAndRestartMatchesAnUnbrokenRun: the test binary started again with
// KERAS_BR_DIR set runs the training (and may be killed) before gtest starts, then exits.
const bool kChildRan = [] {
  const char* dir = std::getenv("KERAS_BR_DIR");
  if (!dir) return false;
  const std::string kill = std::getenv("KERAS_BR_KILL");
  auto m = resumable_run(dir, kill == "batch" ? 2 : -1, 1, kill == "save" ? "weights-3.weights.h5" : "");
  save_weights(*m, std::getenv("KERAS_BR_OUT"));
  std::_Exit(0);
}();

// Killed mid-epoch (after the epoch-2 backup) or inside a save (the epoch-3 weights written, not
// yet committed), the restarted run ends with the unbroken run's weights and optimizer state.
TEST(BackupAndRestoreKill, KillAndRestartMatchesAnUnbrokenRun) {
  auto unbroken = resumable_run("", -1, -1);
  for (const std::string kill : {"batch", "save"}) {
    SCOPED_TRACE(kill);
    fs::path dir = temp_dir("kill_" + kill);
    std::string backup = (dir / "backup").string(), out = (dir / "final.weights.h5").string();
    int status = run_worker(backup, out, kill);
    ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
    ASSERT_EQ(WTERMSIG(status), SIGKILL);
    ASSERT_TRUE(fs::exists(fs::path(backup) / "training_metadata.json"));
    EXPECT_NE(slurp(fs::path(backup) / "training_metadata.json").find("\"epoch\":2"), std::string::npos);
    // Killed in the save: the uncommitted generation's file is there, the metadata does not name it.
    EXPECT_EQ(fs::exists(fs::path(backup) / "weights-3.weights.h5"), kill == "save");
    EXPECT_FALSE(fs::exists(out));
    status = run_worker(backup, out, "none");
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    EXPECT_FALSE(fs::exists(backup));  // deleted after the run completed

    auto resumed = compiled_mlp();
    load_weights(*resumed, out, {.strict = true});
    EXPECT_EQ(values_of(*resumed), values_of(*unbroken));
    EXPECT_EQ(optimizer_values_of(*resumed), optimizer_values_of(*unbroken));
    fs::remove_all(dir);
  }
}
