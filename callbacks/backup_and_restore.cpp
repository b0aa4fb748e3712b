#include "callbacks/backup_and_restore.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "callbacks/monitor.h"
#include "callbacks/weights_file.h"
#include "keras/models/model.h"
#include "optimizers/optimizer.h"

namespace keras::callbacks {

namespace fs = std::filesystem;

namespace {
const char* kWhere = "BackupAndRestore";

// The optimizer with its slots created, so that a restore has variables to fill.
optimizers::Optimizer* built_optimizer(Model& m) {
  optimizers::Optimizer* opt = m.optimizer();
  if (opt && !opt->built()) opt->build(m.trainable_weights());
  return opt;
}
}  // namespace

BackupAndRestoreImpl::BackupAndRestoreImpl(BackupAndRestoreOptions options) : options_(std::move(options)) {
  if (options_.backup_dir.empty()) fail<ValueError>(kWhere, "a backup_dir", "an empty one");
  if (const auto* s = std::get_if<std::string>(&options_.save_freq)) {
    if (*s != "epoch") fail<ValueError>(kWhere, "save_freq \"epoch\" or a number of batches", "'" + *s + "'");
  } else {
    every_ = std::get<int64_t>(options_.save_freq);
    if (every_ < 1) fail<ValueError>(kWhere, "save_freq >= 1 batches", std::to_string(every_));
  }
  if (!options_.save_weights) options_.save_weights = [](Model& m, const std::string& p) { save_weights_file(m, p); };
  if (!options_.load_weights) options_.load_weights = [](Model& m, const std::string& p) { load_weights_file(m, p); };
}

std::string BackupAndRestoreImpl::state_path() const { return (fs::path(options_.backup_dir) / "state.json").string(); }

void BackupAndRestoreImpl::on_train_begin(const Logs&) {
  current_epoch_ = 0;
  last_batch_seen_ = 0;
  batches_since_save_ = 0;
  restored_epoch_ = -1;
  Model* m = model();
  std::string state_file = state_path();
  if (!m || !fs::exists(state_file)) return;
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(read_file_bytes(state_file));
    generation_ = state.at("generation").get<int64_t>();
    int epoch = state.at("epoch").get<int>();
    fs::path dir(options_.backup_dir);
    // Everything is read and checked before the model changes (the loaders are all-or-nothing).
    options_.load_weights(*m, (dir / state.at("weights").get<std::string>()).string());
    if (optimizers::Optimizer* opt = built_optimizer(*m)) {
      std::string opt_file = state.at("optimizer").get<std::string>();
      if (!opt_file.empty()) load_variables(opt->variables(), (dir / opt_file).string());
    }
    restored_epoch_ = epoch;
    current_epoch_ = epoch;
  } catch (const nlohmann::json::exception& e) {
    fail<IOError>("Backup state '" + state_file + "'", "a JSON object with epoch, generation, weights, optimizer",
                  e.what(), "Delete the backup directory to start over.");
  }
  m->resume_epoch = restored_epoch_;
}

void BackupAndRestoreImpl::backup(int epoch, int batch) {
  Model* m = model();
  if (!m) return;
  fs::path dir(options_.backup_dir);
  fs::create_directories(dir);
  int64_t previous = generation_;
  int64_t g = ++generation_;
  std::string weights = "weights-" + std::to_string(g) + ".bin";
  std::string optimizer = "optimizer-" + std::to_string(g) + ".bin";
  // A leftover from a run killed mid-save may hold this generation's names: overwritten.
  options_.save_weights(*m, (dir / weights).string());
  if (optimizers::Optimizer* opt = built_optimizer(*m))
    save_variables(opt->variables(), (dir / optimizer).string());
  else
    optimizer.clear();
  nlohmann::json state = {{"epoch", epoch}, {"batch", batch}, {"generation", g},
                          {"weights", weights}, {"optimizer", optimizer}};
  write_file_atomic(state_path(), state.dump());
  std::error_code ec;
  fs::remove(dir / ("weights-" + std::to_string(previous) + ".bin"), ec);
  fs::remove(dir / ("optimizer-" + std::to_string(previous) + ".bin"), ec);
}

void BackupAndRestoreImpl::on_epoch_end(int epoch, Logs&) {
  current_epoch_ = epoch + 1;
  last_batch_seen_ = 0;
  if (every_ == 0) backup(current_epoch_, 0);
}

void BackupAndRestoreImpl::on_train_batch_end(int batch, const Logs&) {
  if (every_ == 0) return;
  batches_since_save_ += batch <= last_batch_seen_ ? batch + 1 : batch - last_batch_seen_;
  last_batch_seen_ = batch;
  if (batches_since_save_ < every_) return;
  batches_since_save_ = 0;
  backup(current_epoch_, batch);
}

void BackupAndRestoreImpl::on_train_end(const Logs&) {
  if (!options_.delete_checkpoint) return;
  std::error_code ec;
  fs::remove_all(options_.backup_dir, ec);
  generation_ = 0;
}

std::shared_ptr<BackupAndRestoreImpl> BackupAndRestore(BackupAndRestoreOptions options) {
  return std::make_shared<BackupAndRestoreImpl>(std::move(options));
}

}  // namespace keras::callbacks
