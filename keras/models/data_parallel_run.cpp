#include "keras/models/data_parallel_run.h"

#include <cstdio>

#include "keras/models/train_state.h"

namespace keras {

std::unique_ptr<DataParallelRun> DataParallelRun::begin(Model& model, const std::string& where) {
  auto dist = distribution::distribution();
  if (!dist || dist->num_processes() < 2) return nullptr;
  std::unique_ptr<DataParallelRun> run(new DataParallelRun(dist, where));
  collectives::Communicator& comm = run->comm();
  for (Variable& v : model.weights()) {
    Tensor t = v.value();
    comm.broadcast(t, 0);
  }
  for (Variable& v : model.optimizer()->variables()) {
    Tensor t = v.value();
    comm.broadcast(t, 0);
  }
  return run;
}

uint64_t DataParallelRun::agree_seed(uint64_t seed) {
  auto dist = distribution::distribution();
  if (dist && dist->num_processes() > 1) dist->communicator().broadcast(&seed, 1, collectives::ElementType::int64, 0);
  return seed;
}

void DataParallelRun::abort_job(const std::string& during, const std::exception& error) const {
  std::fprintf(stderr, "%s: process %d of %d failed during %s: %s\nEnding every process of the job.\n",
               where_.c_str(), rank(), comm().size(), during.c_str(), error.what());
  comm().abort(1);
}

namespace {
TensorList rows_of(const TensorList& ts, int64_t lo, int64_t hi) {
  TensorList out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(t.slice_batch(lo, hi));
  return out;
}
}  // namespace

std::optional<DataParallelRun::Shard> DataParallelRun::shard(const BatchData& global) {
  const int64_t rows = global.x.empty() ? 0 : global.x[0].dim(0);
  const int size = comm().size();
  if (rows < size) {
    if (!warned_small_batch_ && rank() == 0)
      std::fprintf(stderr, "%s: a batch of %lld rows is smaller than the %d processes; such batches are skipped.\n",
                   where_.c_str(), static_cast<long long>(rows), size);
    warned_small_batch_ = true;
    return std::nullopt;
  }
  auto [lo, hi] = distribution::shard_range(rows, rank(), size);
  Shard s;
  s.batch.x = rows_of(global.x, lo, hi);
  s.batch.y = rows_of(global.y, lo, hi);
  if (global.sample_weight.defined()) s.batch.sample_weight = global.sample_weight.slice_batch(lo, hi);
  s.weight = static_cast<double>(hi - lo) / static_cast<double>(rows);
  return s;
}

distribution::GradientReducer& DataParallelRun::reducer(const std::vector<Variable>& vars) {
  std::vector<std::string> paths;
  paths.reserve(vars.size());
  for (const auto& v : vars) paths.push_back(v.path());
  if (!reducer_ || paths != reducer_paths_) {
    std::vector<TensorSpec> specs;
    for (const auto& v : vars) specs.push_back({v.shape(), v.dtype()});
    reducer_ = std::make_unique<distribution::GradientReducer>(comm(), std::move(specs), dist_->options().bucket_bytes,
                                                               dist_->options().first_bucket_bytes);
    reducer_paths_ = std::move(paths);
  }
  return *reducer_;
}

void DataParallelRun::average_non_trainable(const Model& model) const {
  for (Variable& v : model.non_trainable_weights()) {
    if (!is_floating(v.dtype())) continue;
    Tensor t = v.value();
    comm().allreduce(t, collectives::ReduceOp::mean);
  }
}

Logs DataParallelRun::global_results(const std::vector<std::pair<std::string, metrics::Metric*>>& named) const {
  std::vector<double> states;
  std::vector<size_t> sizes;
  for (const auto& [name, m] : named) {
    auto s = m->state();
    sizes.push_back(s.size());
    states.insert(states.end(), s.begin(), s.end());
  }
  // Every process has the same metrics (one compiled model), so the layouts agree.
  std::vector<double> sums = comm().sum(states);
  Logs logs;
  size_t at = 0;
  for (size_t i = 0; i < named.size(); ++i) {
    metrics::Metric& m = *named[i].second;
    if (sizes[i] == 0) {
      logs.set(named[i].first, m.result());
      continue;
    }
    std::vector<double> local(states.begin() + static_cast<std::ptrdiff_t>(at),
                              states.begin() + static_cast<std::ptrdiff_t>(at + sizes[i]));
    m.set_state(std::vector<double>(sums.begin() + static_cast<std::ptrdiff_t>(at),
                                    sums.begin() + static_cast<std::ptrdiff_t>(at + sizes[i])));
    logs.set(named[i].first, m.result());
    m.set_state(local);
    at += sizes[i];
  }
  return logs;
}

}  // namespace keras
