// BackupAndRestore (keras.callbacks.BackupAndRestore): lets a run killed at any moment (even
// SIGKILL) start again where its last backup left off.
//
// A backup is kept in Keras 3's files in `backup_dir`: the model's weights with the optimizer
// state as a Keras 3 `.weights.h5` (keras::save_weights; keras-inspect and h5py read it), and
// training_metadata.json with Keras's keys {"epoch", "batch"} plus "generation" and "weights",
// the name of the weights file it goes with. Each backup is a new generation:
// weights-<g>.weights.h5 first, then the JSON, written last and atomically, so the JSON always
// names a complete backup whenever the process dies (Keras overwrites one latest.weights.h5, and a
// kill between its two writes pairs new weights with the old epoch). Then latest.weights.h5 is
// made a link to the new generation, so Keras 3 restores from the folder too, and the files of
// earlier generations and of interrupted saves are deleted.
// A folder Keras 3 wrote (no "generation"/"weights": latest.weights.h5 is the backup) restores too.
// on_train_begin restores from training_metadata.json when it exists: weights, optimizer state,
// and the epoch to resume from (Model::resume_epoch, read by fit after on_train_begin). A run
// that ends normally deletes backup_dir (delete_checkpoint).
// Resumption is bit-identical to an unbroken run when the trainer's shuffling depends only on
// (its seed, epoch) and the layers draw no random numbers of their own (Dropout's stream is
// not backed up). Batch-level backups (save_freq = N) resume at the start of the epoch they
// were taken in, with the mid-epoch weights, as Keras does; only "epoch" backups are exact.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "callbacks/model_checkpoint.h"
#include "keras/models/callback.h"

namespace keras::callbacks {

using ModelLoadFn = std::function<void(Model& model, const std::string& path)>;

struct BackupAndRestoreOptions {
  std::string backup_dir;
  std::variant<std::string, int64_t> save_freq = std::string("epoch");  // "epoch" or every N batches
  bool delete_checkpoint = true;
  ModelSaveFn save_weights;  // default: keras::save_weights (weights and optimizer state)
  ModelLoadFn load_weights;  // default: keras::load_weights with strict = true
};

class BackupAndRestoreImpl : public Callback {
 public:
  // ValueError for an empty backup_dir or a bad save_freq.
  explicit BackupAndRestoreImpl(BackupAndRestoreOptions options);

  // Restores when a backup exists. IOError naming the file for a corrupt training_metadata.json
  // (bad JSON, a negative epoch, a generation and weights name that disagree) or a weights file
  // that does not fit the model; nothing is changed then.
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  // The epoch the last restore resumed from (-1: nothing restored).
  int restored_epoch() const { return restored_epoch_; }
  // backup_dir/training_metadata.json
  std::string state_path() const;

 private:
  void backup(int epoch, int batch);
  void publish_latest(const std::string& weights) const;
  void remove_stale_files(const std::string& keep) const;
  BackupAndRestoreOptions options_;
  int64_t every_ = 0;  // 0: per epoch
  int current_epoch_ = 0;
  int last_batch_seen_ = 0;
  int64_t batches_since_save_ = 0;
  int64_t generation_ = 0;
  int restored_epoch_ = -1;
};

std::shared_ptr<BackupAndRestoreImpl> BackupAndRestore(BackupAndRestoreOptions options);

}  // namespace keras::callbacks
