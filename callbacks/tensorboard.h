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
// profile_batch = N profiles the N-th batch, {start, stop} batches start..stop (1-based, counted
// over the whole fit, as Keras counts them), 0 = off: keras::profiler runs from
// on_train_batch_begin of `start` to on_train_batch_end of `stop` and writes its trace to
// <log_dir>/train/plugins/profile/<run>/<host>.trace.json.gz (profile_file()).
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

// The batches to profile: N (that batch only), {start, stop} (inclusive) or Keras's legacy text
// "start,stop"; 0 = none. ValueError for a negative N, or a pair that is not positive with
// start <= stop.
struct ProfileBatch {
  ProfileBatch(int batch = 0);
  ProfileBatch(int start, int stop);
  ProfileBatch(const char* text);
  bool enabled() const { return start_ > 0; }
  int start() const { return start_; }
  int stop() const { return stop_; }

 private:
  int start_ = 0, stop_ = 0;
};

struct TensorBoardOptions {
  std::string log_dir = "logs";
  int histogram_freq = 0;   // epochs between weight histograms; 0 = none
  bool write_graph = true;  // accepted for Keras parity; no graph is written
  UpdateFreq update_freq = "epoch";
  ProfileBatch profile_batch = 0;
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
  // The trace of the last profile_batch range; empty before one was written.
  std::string profile_file() const { return profile_path_; }

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
  void stop_trace();

  TensorBoardOptions options_;
  std::unique_ptr<tfevents::EventFileWriter> train_, val_;
  std::string train_path_, val_path_;
  int64_t global_train_batch_ = 0;
  bool tracing_ = false;  // this callback started the running profile
  std::string profile_path_;
};

// The Keras spelling: `callbacks::TensorBoard({.log_dir = "logs", .histogram_freq = 1})`.
std::shared_ptr<TensorBoardImpl> TensorBoard(TensorBoardOptions options = {});

}  // namespace keras::callbacks
