#include "callbacks/learning_rate_scheduler.h"

#include <cmath>
#include <iostream>

#include "keras/models/model.h"
#include "optimizers/optimizer.h"

namespace keras::callbacks {

namespace {
const char* kWhere = "LearningRateScheduler";

optimizers::Optimizer& optimizer_of(Model* m) {
  if (!m || !m->optimizer())
    fail<StateError>(kWhere, "a compiled model with an optimizer", m ? "an uncompiled model" : "no model",
                     "Use the callback inside fit().");
  return *m->optimizer();
}
}  // namespace

LearningRateSchedulerImpl::LearningRateSchedulerImpl(const LearningRateSchedulerOptions& options) : options_(options) {
  if (!options_.schedule) fail<ValueError>(kWhere, "a schedule function", "none");
}

void LearningRateSchedulerImpl::on_epoch_begin(int epoch, const Logs&) {
  optimizers::Optimizer& opt = optimizer_of(model());
  double lr = options_.schedule(epoch, opt.learning_rate());
  if (!std::isfinite(lr) || lr < 0)
    fail<ValueError>(std::string(kWhere) + " (epoch " + std::to_string(epoch) + ")",
                     "a finite, non-negative learning rate from the schedule", std::to_string(lr));
  opt.set_learning_rate(lr);
  if (options_.verbose > 0)
    std::cout << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to " << lr << "."
              << std::endl;
}

void LearningRateSchedulerImpl::on_epoch_end(int, Logs& logs) {
  logs.set("learning_rate", optimizer_of(model()).learning_rate());
}

std::shared_ptr<LearningRateSchedulerImpl> LearningRateScheduler(const LearningRateSchedulerOptions& options) {
  return std::make_shared<LearningRateSchedulerImpl>(options);
}

std::shared_ptr<LearningRateSchedulerImpl> LearningRateScheduler(LearningRateScheduleFn schedule, int verbose) {
  return LearningRateScheduler(LearningRateSchedulerOptions{std::move(schedule), verbose});
}

}  // namespace keras::callbacks
