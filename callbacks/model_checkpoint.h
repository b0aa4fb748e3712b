// ModelCheckpoint (keras.callbacks.ModelCheckpoint): saves the model (or its weights) during
// fit, every epoch or every `save_freq` batches, optionally only when the monitored quantity
// improves (strictly; no min_delta).
//
// The file name is `filepath` formatted as Python's str.format(epoch=epoch + 1, batch=batch + 1,
// **logs) (py_format.h): "ckpt-{epoch:02d}-{val_loss:.2f}.keras" -> "ckpt-03-0.41.keras"; an
// unknown key is a ValueError. Missing parent directories are created. Every save goes to a
// temporary file in the target directory (with the target's extension) renamed over the
// target, so a crash mid-save never destroys the previous checkpoint, whatever the saver.
//
// The savers are injectable: `save_model` defaults to keras::save_model (filepath ending in
// .keras, or a legacy .h5) and `save_weights` (save_weights_only) to keras::save_weights
// (.weights.h5 or legacy .h5); with a default saver, another suffix is a ValueError at
// construction, as in Keras 3.
// Mode "auto" (used only with save_best_only): "loss" -> min, else the compiled metric's
// declared direction, else ValueError.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "callbacks/monitor.h"
#include "keras/models/callback.h"

namespace keras::callbacks {

// Writes `model` to `path` (the path is final: the callback handles atomicity).
using ModelSaveFn = std::function<void(Model& model, const std::string& path)>;

struct ModelCheckpointOptions {
  std::string filepath;
  std::string monitor = "val_loss";
  int verbose = 0;
  bool save_best_only = false;
  bool save_weights_only = false;
  std::string mode = "auto";
  std::variant<std::string, int64_t> save_freq = std::string("epoch");  // "epoch" or every N batches
  std::optional<double> initial_value_threshold;  // the "best" to beat at first
  ModelSaveFn save_weights;                       // default: keras::save_weights
  ModelSaveFn save_model;                         // default: keras::save_model
};

class ModelCheckpointImpl : public Callback {
 public:
  bool chief_only() const override { return true; }
  // Throws ValueError for an empty filepath, save_freq other than "epoch" or N >= 1, or a bad mode.
  explicit ModelCheckpointImpl(ModelCheckpointOptions options);

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;

  // The formatted path for (0-based) `epoch`, `batch` (-1: none) and `logs`.
  std::string file_path(int epoch, int batch, const Logs& logs) const;
  double best() const { return best_; }
  const std::string& last_saved() const { return last_saved_; }  // "" before the first save

 private:
  bool should_save_on_batch(int batch);
  void save(int epoch, int batch, const Logs& logs);
  ModelCheckpointOptions options_;
  int64_t every_ = 0;  // 0: per epoch
  std::optional<Direction> direction_;
  double best_ = 0;
  int current_epoch_ = 0;
  int last_batch_seen_ = 0;
  int64_t batches_since_save_ = 0;
  std::string last_saved_;
};

std::shared_ptr<ModelCheckpointImpl> ModelCheckpoint(ModelCheckpointOptions options);

}  // namespace keras::callbacks
