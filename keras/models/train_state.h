// What compile() sets up for training: optimizer, loss, metrics and the loss tracker.
// Private to keras/ (model.h only forward-declares it).
#pragma once
#include <memory>
#include <vector>

#include "keras/models/data_parallel_run.h"
#include "keras/models/model.h"
#include "losses/loss.h"
#include "metrics/accuracy.h"
#include "metrics/mean.h"
#include "metrics/metric.h"
#include "optimizers/optimizer.h"

namespace keras {

struct Model::TrainState {
  bool compiled = false;
  CompileOptions given;  // as passed to compile(), for the saved compile config
  std::shared_ptr<optimizers::Optimizer> optimizer;
  std::vector<std::shared_ptr<losses::Loss>> losses;  // one per output
  std::vector<double> loss_weights;                   // one per output
  std::vector<std::string> output_names;              // log prefixes when several outputs
  // Per output, as given to compile, then resolved on the first batch (they need y's shape).
  std::vector<std::vector<NamedOr<metrics::Metric>>> metric_args, weighted_metric_args;
  std::vector<std::vector<std::shared_ptr<metrics::Metric>>> metrics, weighted_metrics;
  std::shared_ptr<metrics::MeanImpl> loss_tracker;
  std::vector<std::shared_ptr<metrics::MeanImpl>> output_loss_trackers;  // several outputs only
  bool metrics_built = false;
  TensorList last_train_x;
  // Set while fit or evaluate runs under a multi-process DataParallel distribution.
  std::shared_ptr<DataParallelRun> parallel;
};

}  // namespace keras
