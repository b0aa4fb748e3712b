#include "callbacks/backup_and_restore.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "callbacks/monitor.h"
#include "keras/models/model.h"
#include "keras/saving/saving.h"
#include "keras/utils/file_util.h"
#include "optimizers/optimizer.h"

namespace keras::callbacks {

namespace fs = std::filesystem;

namespace {
const char* kWhere = "BackupAndRestore";

// Builds the optimizer's slots, so that a backup holds them from the first one on and a restore
// has variables to fill.
void build_optimizer(Model& m) {
  optimizers::Optimizer* opt = m.compiled() ? m.optimizer() : nullptr;
  if (opt && !opt->built()) opt->build(m.trainable_weights());
}

std::string weights_name(int64_t generation) { return "weights-" + std::to_string(generation) + ".weights.h5"; }
}  // namespace

BackupAndRestoreImpl::BackupAndRestoreImpl(BackupAndRestoreOptions options) : options_(std::move(options)) {
  if (options_.backup_dir.empty()) fail<ValueError>(kWhere, "a backup_dir", "an empty one");
  if (const auto* s = std::get_if<std::string>(&options_.save_freq)) {
    if (*s != "epoch") fail<ValueError>(kWhere, "save_freq \"epoch\" or a number of batches", "'" + *s + "'");
  } else {
    every_ = std::get<int64_t>(options_.save_freq);
    if (every_ < 1) fail<ValueError>(kWhere, "save_freq >= 1 batches", std::to_string(every_));
  }
  if (!options_.save_weights) options_.save_weights = [](Model& m, const std::string& p) { keras::save_weights(m, p); };
  if (!options_.load_weights)
    options_.load_weights = [](Model& m, const std::string& p) {
      LoadWeightsOptions strict;
      strict.strict = true;
      keras::load_weights(m, p, strict);
    };
}

std::string BackupAndRestoreImpl::state_path() const {
  return (fs::path(options_.backup_dir) / "training_metadata.json").string();
}

void BackupAndRestoreImpl::on_train_begin(const Logs&) {
  current_epoch_ = 0;
  last_batch_seen_ = 0;
  batches_since_save_ = 0;
  restored_epoch_ = -1;
  Model* m = model();
  std::string state_file = state_path();
  if (!m || !fs::exists(state_file)) return;
  int epoch = 0;
  std::string weights;
  try {
    nlohmann::json state = nlohmann::json::parse(read_file_bytes(state_file));
    epoch = state.at("epoch").get<int>();
    generation_ = state.at("generation").get<int64_t>();
    weights = state.at("weights").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    fail<IOError>("Backup state '" + state_file + "'", "a JSON object with epoch, batch, generation and weights",
                  e.what(), "Delete the backup directory to start over.");
  }
  if (weights.empty() || fs::path(weights).has_parent_path())
    fail<IOError>("Backup state '" + state_file + "'", "\"weights\" naming a file in the backup directory",
                  "'" + weights + "'", "Delete the backup directory to start over.");
  build_optimizer(*m);
  // The default loader is strict and all-or-nothing: a backup of another model changes nothing.
  options_.load_weights(*m, (fs::path(options_.backup_dir) / weights).string());
  restored_epoch_ = epoch;
  current_epoch_ = epoch;
  m->resume_epoch = restored_epoch_;
}

void BackupAndRestoreImpl::backup(int epoch, int batch) {
  Model* m = model();
  if (!m) return;
  fs::path dir(options_.backup_dir);
  fs::create_directories(dir);
  int64_t previous = generation_;
  int64_t g = ++generation_;
  // A leftover from a run killed mid-save may hold this generation's name: overwritten.
  build_optimizer(*m);
  options_.save_weights(*m, (dir / weights_name(g)).string());
  nlohmann::json state = {{"epoch", epoch}, {"batch", batch}, {"generation", g}, {"weights", weights_name(g)}};
  write_file_atomic(state_path(), state.dump());
  std::error_code ec;
  fs::remove(dir / weights_name(previous), ec);
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
