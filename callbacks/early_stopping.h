// EarlyStopping (keras.callbacks.EarlyStopping, Keras 3 rules): stops fit when the monitored
// quantity has stopped improving.
//
// Per epoch end (epochs < start_from_epoch and epochs without the monitored key are ignored):
//   wait += 1; an improvement (min: current + min_delta < best, max: current - min_delta > best;
//   the first counted epoch always improves) makes it the best and resets wait to 0, but only
//   if it also improves on `baseline` (when given); otherwise fit stops once
//   wait >= patience and epoch > 0.
// restore_best_weights keeps a copy of the weights of the best epoch (the first counted epoch
// to begin with) and puts them back in on_train_end, whether or not training stopped early.
//
//   model.fit(x, y, {.epochs = 100, .callbacks = {keras::callbacks::EarlyStopping({.patience = 3})}});
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "backend/op_registry.h"
#include "callbacks/monitor.h"
#include "keras/models/callback.h"

namespace keras::callbacks {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;  // its absolute value is used, as Keras
  int patience = 0;
  int verbose = 0;
  std::string mode = "auto";  // "auto": see monitor.h; unknown direction -> ValueError
  std::optional<double> baseline;
  bool restore_best_weights = false;
  int start_from_epoch = 0;
};

class EarlyStoppingImpl : public Callback {
 public:
  // Throws ValueError for a mode other than auto/min/max or a negative patience.
  explicit EarlyStoppingImpl(const EarlyStoppingOptions& options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  const EarlyStoppingOptions& options() const { return options_; }
  int wait() const { return wait_; }
  int stopped_epoch() const { return stopped_epoch_; }  // 0 when training was not stopped
  std::optional<double> best() const { return best_; }
  int best_epoch() const { return best_epoch_; }

 private:
  EarlyStoppingOptions options_;
  std::optional<Direction> direction_;  // resolved at the first epoch end (metrics exist then)
  int wait_ = 0;
  int stopped_epoch_ = 0;
  std::optional<double> best_;
  int best_epoch_ = 0;
  TensorList best_weights_;
};

std::shared_ptr<EarlyStoppingImpl> EarlyStopping(const EarlyStoppingOptions& options = {});

}  // namespace keras::callbacks
