// LearningRateScheduler (keras.callbacks.LearningRateScheduler): at each epoch begin, sets the
// optimizer's rate to schedule(epoch, current_rate); each epoch end logs "learning_rate".
//
//   auto cb = keras::callbacks::LearningRateScheduler(
//       {.schedule = [](int epoch, double lr) { return epoch < 10 ? lr : lr * 0.9; }});
#pragma once
#include <functional>
#include <memory>

#include "keras/models/callback.h"

namespace keras::callbacks {

// (0-based epoch, current rate) -> new rate.
using LearningRateScheduleFn = std::function<double(int epoch, double lr)>;

struct LearningRateSchedulerOptions {
  LearningRateScheduleFn schedule;
  int verbose = 0;
};

class LearningRateSchedulerImpl : public Callback {
 public:
  // Throws ValueError when no schedule is given.
  explicit LearningRateSchedulerImpl(const LearningRateSchedulerOptions& options);
  // Throws StateError without an optimizer, ValueError when the schedule returns a non-finite
  // or negative rate, TypeError (from the optimizer) when its rate is a schedule object.
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;

 private:
  LearningRateSchedulerOptions options_;
};

std::shared_ptr<LearningRateSchedulerImpl> LearningRateScheduler(const LearningRateSchedulerOptions& options);
// Shorthand: LearningRateScheduler(fn, verbose).
std::shared_ptr<LearningRateSchedulerImpl> LearningRateScheduler(LearningRateScheduleFn schedule, int verbose = 0);

}  // namespace keras::callbacks
