#include "callbacks/backup_and_restore.h"

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/collectives/communicator.h"
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

const char* const kLatest = "latest.weights.h5";
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
  generation_ = 0;
  Model* m = model();
  const std::string state_file = state_path();
  std::error_code ec;
  if (!m || !fs::exists(state_file, ec)) return;
  const std::string where = "Backup state '" + state_file + "'";
  const char* restart = "Delete the backup directory to start over.";
  int epoch = 0;
  std::string weights = kLatest;  // a backup Keras 3 wrote: {"epoch", "batch"} beside latest.weights.h5
  try {
    nlohmann::json state = nlohmann::json::parse(read_file_bytes(state_file));
    epoch = state.at("epoch").get<int>();
    if (state.contains("generation") || state.contains("weights")) {
      generation_ = state.at("generation").get<int64_t>();
      weights = state.at("weights").get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    fail<IOError>(where, "a JSON object with epoch (and generation and weights, or none of them)", e.what(), restart);
  }
  if (epoch < 0) fail<IOError>(where, "epoch >= 0", std::to_string(epoch), restart);
  if (weights != kLatest && (generation_ < 1 || weights != weights_name(generation_)))
    fail<IOError>(where, "\"weights\": \"weights-<generation>.weights.h5\" with generation >= 1",
                  "generation " + std::to_string(generation_) + " and weights '" + weights + "'", restart);
  build_optimizer(*m);
  try {
    // The default loader is strict and all-or-nothing: a backup of another model changes nothing.
    options_.load_weights(*m, (fs::path(options_.backup_dir) / weights).string());
  } catch (const IOError& e) {
    fail<IOError>("BackupAndRestore('" + options_.backup_dir + "')", "a backup that fits the model", e.what(), restart);
  }
  remove_stale_files(weights);
  restored_epoch_ = epoch;
  current_epoch_ = epoch;
  m->resume_epoch = restored_epoch_;
}

namespace {
// Under data parallelism process 0 writes the backups and every process restores from them (the
// directory must be shared, as with Keras's multi-worker training).
bool writes_backups() {
  const collectives::Communicator* group = collectives::training_group();
  return !group || group->rank() == 0;
}
}  // namespace

void BackupAndRestoreImpl::backup(int epoch, int batch) {
  Model* m = model();
  if (!m) return;
  if (!writes_backups()) return;
  const fs::path dir(options_.backup_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    fail<IOError>("BackupAndRestore('" + options_.backup_dir + "')", "a directory it can create", ec.message());
  const int64_t g = ++generation_;
  build_optimizer(*m);
  options_.save_weights(*m, (dir / weights_name(g)).string());
  nlohmann::json state = {{"epoch", epoch}, {"batch", batch}, {"generation", g}, {"weights", weights_name(g)}};
  write_file_atomic(state_path(), state.dump());
  publish_latest(weights_name(g));
  remove_stale_files(weights_name(g));
}

// For Keras 3, which reads latest.weights.h5: a hard link to the committed generation (a copy where
// links are refused), renamed into place. Best effort: our own restore reads the named file, and
// a Keras reader meets the same window between weights and metadata that Keras's own writes have.
void BackupAndRestoreImpl::publish_latest(const std::string& weights) const {
  const fs::path dir(options_.backup_dir), tmp = dir / (std::string(kLatest) + ".tmp");
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(dir / weights, tmp, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(dir / weights, tmp, ec);
  }
  if (!ec) fs::rename(tmp, dir / kLatest, ec);
  if (ec) fs::remove(tmp, ec);
}

// Earlier generations, and temporaries of a run killed mid-save, once `keep` is committed.
void BackupAndRestoreImpl::remove_stale_files(const std::string& keep) const {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(options_.backup_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != keep && (name.starts_with("weights-") || name.starts_with(std::string(kLatest) + ".tmp")))
      stale.push_back(it->path());
  }
  for (const auto& p : stale) fs::remove(p, ec);
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
  if (collectives::Communicator* group = collectives::training_group()) group->barrier();  // all have restored
  if (!writes_backups()) return;
  std::error_code ec;
  fs::remove_all(options_.backup_dir, ec);
  generation_ = 0;
}

std::shared_ptr<BackupAndRestoreImpl> BackupAndRestore(BackupAndRestoreOptions options) {
  return std::make_shared<BackupAndRestoreImpl>(std::move(options));
}

}  // namespace keras::callbacks
