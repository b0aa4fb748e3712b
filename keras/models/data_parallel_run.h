// What fit keeps while a keras::distribution::DataParallel is in force over several processes
// (the behaviour is described in keras/distribute/distribution.h). Private to keras/models.
#pragma once
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keras/distribute/distribution.h"
#include "keras/distribute/gradient_reducer.h"
#include "keras/models/batch_source.h"
#include "keras/models/model.h"
#include "metrics/metric.h"

namespace keras {

class DataParallelRun {
 public:
  // Null when no distribution is in force or it spans one process. Broadcasts the model's
  // weights and the optimizer's variables from process 0 (a collective: every process calls it).
  static std::unique_ptr<DataParallelRun> begin(Model& model, const std::string& where);

  collectives::Communicator& comm() const { return dist_->communicator(); }
  int rank() const { return comm().rank(); }

  // Process 0's value of a seed when a multi-process distribution is in force (so that every
  // process shuffles alike); `seed` otherwise.
  static uint64_t agree_seed(uint64_t seed);
  // Prints which process failed and why, then ends every process of the job (the others would
  // wait forever in their next collective).
  [[noreturn]] void abort_job(const std::string& during, const std::exception& error) const;
  // This process's rows of a global batch, and its weight rows / global rows. nullopt when the
  // global batch has fewer rows than processes: every process skips it (same decision everywhere).
  struct Shard {
    BatchData batch;
    double weight = 1;
  };
  std::optional<Shard> shard(const BatchData& global);
  // The reducer for `vars` (rebuilt when the trainable set changes).
  distribution::GradientReducer& reducer(const std::vector<Variable>& vars);
  // Averages non-trainable float variables (moving statistics) over the processes.
  void average_non_trainable(const Model& model) const;
  // `named` metrics' results over every process (summed states); metrics without states give
  // their local result.
  Logs global_results(const std::vector<std::pair<std::string, metrics::Metric*>>& named) const;
  // Seconds spent blocked on gradient allreduces so far.
  double allreduce_wait_seconds() const { return reducer_ ? reducer_->wait_seconds() : 0; }

 private:
  DataParallelRun(std::shared_ptr<const distribution::DataParallel> dist, std::string where)
      : dist_(std::move(dist)), where_(std::move(where)) {}
  std::shared_ptr<const distribution::DataParallel> dist_;
  std::string where_;
  std::unique_ptr<distribution::GradientReducer> reducer_;
  std::vector<std::string> reducer_paths_;
  bool warned_small_batch_ = false;
};

// Installs a run into `slot` (TrainState::parallel) for the scope of a loop, unless one is there
// already (evaluate inside fit), and restores the slot after.
struct ParallelScope {
  ParallelScope(Model& model, std::shared_ptr<DataParallelRun>& slot, const std::string& where)
      : slot_(slot), previous_(slot) {
    if (!slot_) slot_ = DataParallelRun::begin(model, where);
    run = slot_.get();
  }
  ~ParallelScope() { slot_ = previous_; }
  ParallelScope(const ParallelScope&) = delete;
  ParallelScope& operator=(const ParallelScope&) = delete;
  DataParallelRun* run = nullptr;

 private:
  std::shared_ptr<DataParallelRun>& slot_;
  std::shared_ptr<DataParallelRun> previous_;
};

}  // namespace keras
