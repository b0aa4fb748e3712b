// ReduceLROnPlateau (keras.callbacks.ReduceLROnPlateau): lowers the optimizer's learning rate
// when the monitored quantity stops improving.
//
// Per epoch end: logs gain "learning_rate" (the rate the epoch ran with). During cooldown the
// counter drops by one and wait stays 0. An improvement (min: current < best - min_delta; max:
// current > best + min_delta) resets wait; otherwise, outside cooldown, wait += 1 and once
// wait >= patience: if lr > min_lr, lr <- max(lr * factor, min_lr), cooldown starts, wait = 0.
// Mode "auto" uses the compiled metric's direction where declared, else Keras's name rule
// ("acc" in the name -> max), so it never fails on an unknown metric.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "callbacks/monitor.h"
#include "keras/models/callback.h"

namespace keras::callbacks {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  int verbose = 0;
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0.0;
};

class ReduceLROnPlateauImpl : public Callback {
 public:
  // Throws ValueError for factor >= 1 (or <= 0), a bad mode, or a negative patience/cooldown.
  explicit ReduceLROnPlateauImpl(const ReduceLROnPlateauOptions& options = {});

  void on_train_begin(const Logs& logs) override;
  // Throws StateError when the model has no optimizer; TypeError (from the optimizer) when its
  // rate is a schedule and a reduction is due.
  void on_epoch_end(int epoch, Logs& logs) override;

  int wait() const { return wait_; }
  int cooldown_counter() const { return cooldown_counter_; }
  double best() const { return best_; }

 private:
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  ReduceLROnPlateauOptions options_;
  std::optional<Direction> direction_;
  int wait_ = 0;
  int cooldown_counter_ = 0;
  double best_ = 0;
};

std::shared_ptr<ReduceLROnPlateauImpl> ReduceLROnPlateau(const ReduceLROnPlateauOptions& options = {});

}  // namespace keras::callbacks
