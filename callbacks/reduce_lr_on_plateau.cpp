#include "callbacks/reduce_lr_on_plateau.h"

#include <algorithm>
#include <iostream>

#include "keras/models/model.h"
#include "optimizers/optimizer.h"

namespace keras::callbacks {

namespace {
const char* kWhere = "ReduceLROnPlateau";

optimizers::Optimizer& optimizer_of(Model* m) {
  if (!m || !m->optimizer())
    fail<StateError>(kWhere, "a compiled model with an optimizer", m ? "an uncompiled model" : "no model",
                     "Use the callback inside fit().");
  return *m->optimizer();
}
}  // namespace

ReduceLROnPlateauImpl::ReduceLROnPlateauImpl(const ReduceLROnPlateauOptions& options) : options_(options) {
  if (options_.factor >= 1.0 || options_.factor <= 0.0)
    fail<ValueError>(kWhere, "0 < factor < 1", std::to_string(options_.factor));
  if (options_.mode != "auto" && options_.mode != "min" && options_.mode != "max")
    fail<ValueError>(kWhere, "mode 'auto', 'min' or 'max'", "'" + options_.mode + "'");
  if (options_.patience < 0) fail<ValueError>(kWhere, "patience >= 0", std::to_string(options_.patience));
  if (options_.cooldown < 0) fail<ValueError>(kWhere, "cooldown >= 0", std::to_string(options_.cooldown));
}

void ReduceLROnPlateauImpl::on_train_begin(const Logs&) {
  direction_.reset();
  wait_ = 0;
  cooldown_counter_ = 0;
}

void ReduceLROnPlateauImpl::on_epoch_end(int epoch, Logs& logs) {
  optimizers::Optimizer& opt = optimizer_of(model());
  logs.set("learning_rate", opt.learning_rate());
  if (!direction_) {
    direction_ = resolve_direction(kWhere, options_.mode, options_.monitor, model());
    if (!direction_) direction_ = legacy_direction(options_.monitor);
    best_ = worst_value(*direction_);
  }
  std::optional<double> current = logs.get(options_.monitor);
  if (!current) {
    warn(kWhere, "learning rate reduction is conditioned on metric '" + options_.monitor +
                     "' which is not available. Available metrics are: " + key_list(logs));
    return;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (is_improvement(*direction_, *current, best_, options_.min_delta)) {
    best_ = *current;
    wait_ = 0;
    return;
  }
  if (in_cooldown()) return;
  if (++wait_ < options_.patience) return;
  double old_lr = opt.learning_rate();
  // Compared in float32 as Keras does, so a rate already at min_lr is not "reduced" forever.
  if (static_cast<float>(old_lr) > static_cast<float>(options_.min_lr)) {
    double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
    opt.set_learning_rate(new_lr);
    if (options_.verbose > 0)
      std::cout << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to " << new_lr << "."
                << std::endl;
    cooldown_counter_ = options_.cooldown;
    wait_ = 0;
  }
}

std::shared_ptr<ReduceLROnPlateauImpl> ReduceLROnPlateau(const ReduceLROnPlateauOptions& options) {
  return std::make_shared<ReduceLROnPlateauImpl>(options);
}

}  // namespace keras::callbacks
