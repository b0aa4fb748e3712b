#include "callbacks/early_stopping.h"

#include <cmath>
#include <iostream>

#include "keras/models/model.h"

namespace keras::callbacks {

namespace {
const char* kWhere = "EarlyStopping";
}

EarlyStoppingImpl::EarlyStoppingImpl(const EarlyStoppingOptions& options) : options_(options) {
  options_.min_delta = std::abs(options_.min_delta);
  if (options_.mode != "auto" && options_.mode != "min" && options_.mode != "max")
    fail<ValueError>(kWhere, "mode 'auto', 'min' or 'max'", "'" + options_.mode + "'");
  if (options_.patience < 0) fail<ValueError>(kWhere, "patience >= 0", std::to_string(options_.patience));
}

void EarlyStoppingImpl::on_train_begin(const Logs&) {
  wait_ = 0;
  stopped_epoch_ = 0;
  best_.reset();
  best_epoch_ = 0;
  best_weights_.clear();
}

void EarlyStoppingImpl::on_epoch_end(int epoch, Logs& logs) {
  if (!direction_) {
    direction_ = resolve_direction(kWhere, options_.mode, options_.monitor, model());
    if (!direction_)
      fail<ValueError>(std::string(kWhere) + "(monitor='" + options_.monitor + "')",
                       "a metric whose direction (min or max) is known", "no declared direction",
                       "Pass mode=\"min\" or mode=\"max\".");
  }
  std::optional<double> current = logs.get(options_.monitor);
  if (!current) {
    warn(kWhere, "early stopping conditioned on metric '" + options_.monitor +
                     "' which is not available. Available metrics are: " + key_list(logs));
    return;
  }
  if (epoch < options_.start_from_epoch) return;
  Model* m = model();
  if (options_.restore_best_weights && best_weights_.empty() && m) {
    best_weights_ = m->get_weights();
    best_epoch_ = epoch;
  }
  ++wait_;
  if (!best_ || is_improvement(*direction_, *current, *best_, options_.min_delta)) {
    best_ = *current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights && m) best_weights_ = m->get_weights();
    // An improvement that does not beat the baseline still counts toward patience.
    if (!options_.baseline || is_improvement(*direction_, *current, *options_.baseline, options_.min_delta)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    if (m) m->stop_training = true;
  }
}

void EarlyStoppingImpl::on_train_end(const Logs&) {
  if (stopped_epoch_ > 0 && options_.verbose > 0)
    std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping" << std::endl;
  if (options_.restore_best_weights && !best_weights_.empty() && model()) {
    if (options_.verbose > 0)
      std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << "." << std::endl;
    model()->set_weights(best_weights_);
  }
}

std::shared_ptr<EarlyStoppingImpl> EarlyStopping(const EarlyStoppingOptions& options) {
  return std::make_shared<EarlyStoppingImpl>(options);
}

}  // namespace keras::callbacks
