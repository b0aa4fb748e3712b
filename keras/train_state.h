// What compile() sets up for training: optimizer, loss, metrics and the loss tracker.
// Private to keras/ (model.h only forward-declares it).
#pragma once
#include <memory>
#include <vector>

#include "keras/model.h"
#include "losses/loss.h"
#include "metrics/accuracy.h"
#include "metrics/mean.h"
#include "metrics/metric.h"
#include "optimizers/optimizer.h"

namespace keras {

struct Model::TrainState {
  bool compiled = false;
  std::shared_ptr<optimizers::Optimizer> optimizer;
  std::shared_ptr<losses::Loss> loss;
  std::vector<NamedOr<metrics::Metric>> metric_args;       // as given to compile
  std::vector<std::shared_ptr<metrics::Metric>> metrics;   // resolved on the first batch
  std::shared_ptr<metrics::MeanImpl> loss_tracker;
  bool metrics_built = false;
};

}  // namespace keras
