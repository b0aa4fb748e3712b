// TensorBoard callback (keras.callbacks.TensorBoard): writes event files that TensorBoard shows,
// with Keras's runs and tags (keras-formats.md section 7):
//   <log_dir>/train       epoch_<metric> and epoch_learning_rate at step = epoch (0-based),
//                         batch_<metric> every update_freq batches at step = global batch (1-based),
//                         <weight path>/histogram every histogram_freq epochs at step = epoch;
//   <log_dir>/validation  epoch_<metric> from the val_ entries (prefix dropped),
//                         evaluation_<metric>_vs_iterations at the end of each test run, at
//                         step = optimizer iterations.
// Scalars use the TF2 tensor form with the "scalars" plugin metadata; histograms the legacy
// HistogramProto with 30 equal-width buckets over [min, max] (tf.summary.histogram's count).
//
//   model.fit(x, y, {.epochs = 5, .callbacks = {keras::callbacks::TensorBoard({.log_dir = "logs"})}});
//
// Each fit opens new files (one per run) and closes them when training ends, as Keras does.
// Unlike Keras 3, whose record_if captures the step by value and so logs every batch,
// update_freq = N really writes every N-th batch (the documented behaviour).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "callbacks/event_writer.h"
#include "keras/models/callback.h"

namespace keras::callbacks {

// "epoch" (epoch summaries only), "batch" (every batch) or a number of batches N >= 1.
struct UpdateFreq {
  UpdateFreq(const char* s) : UpdateFreq(std::string(s)) {}
  UpdateFreq(const std::string& s);  // ValueError unless "epoch" or "batch"
  UpdateFreq(int batches);           // ValueError when < 1
  bool per_epoch() const { return batches_ == 0; }
  int64_t batches() const { return batches_; }  // 0 for "epoch"

 private:
  int64_t batches_ = 0;
};

struct TensorBoardOptions {
  std::string log_dir = "logs";
  int histogram_freq = 0;   // epochs between weight histograms; 0 = none
  bool write_graph = true;  // accepted for Keras parity; no graph is written
  UpdateFreq update_freq = "epoch";
};

class TensorBoardImpl : public Callback {
 public:
  bool chief_only() const override { return true; }
  // Throws ValueError when histogram_freq < 0 or log_dir is empty. Creates nothing until
  // training starts.
  explicit TensorBoardImpl(TensorBoardOptions options = {});
  const TensorBoardOptions& options() const { return options_; }
  // Paths of the event files of the current (or last) run; empty before one was opened.
  std::string train_event_file() const;
  std::string validation_event_file() const;

  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_train_batch_begin(int batch, const Logs& logs) override;
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;

 private:
  tfevents::EventFileWriter& train_writer();
  tfevents::EventFileWriter& val_writer();
  void log_weights(int epoch);
  void close_writers();

  TensorBoardOptions options_;
  std::unique_ptr<tfevents::EventFileWriter> train_, val_;
  std::string train_path_, val_path_;
  int64_t global_train_batch_ = 0;
};

// The Keras spelling: `callbacks::TensorBoard({.log_dir = "logs", .histogram_freq = 1})`.
std::shared_ptr<TensorBoardImpl> TensorBoard(TensorBoardOptions options = {});

}  // namespace keras::callbacks
