// Averages one training step's gradients over a process group the way PyTorch DDP does: the
// variables are split into buckets of about `bucket_bytes`, in reverse order (gradients of the
// last layers are final first in backward), and each bucket's allreduce starts in the background
// as soon as its gradients are in, while backward goes on. Buckets start strictly in index order,
// so every process issues the same collectives in the same order whatever its walk does.
//
//   GradientReducer reducer(comm, specs, 25 << 20, 1 << 20);
//   reducer.begin_step(local_rows / global_rows);   // this process's weight in the average
//   grads = tape.gradient(loss, sources, reducer.ready_fn());
//   grads = reducer.finish(grads);                   // the global average, on every process
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "backend/collectives/communicator.h"
#include "backend/op_registry.h"

namespace keras::distribution {

// What every GradientReducer of this process did since the last reset (for benchmarks: the share
// of a step spent waiting is wait_seconds over the steps' time).
struct ReductionStats {
  int64_t steps = 0;          // finish() calls
  double wait_seconds = 0;    // blocked in finish(), waiting for allreduces
  int64_t bytes = 0;          // allreduced, counts included
  int64_t buckets = 0;        // allreduces started
};
ReductionStats reduction_stats();
void reset_reduction_stats();

class GradientReducer {
 public:
  // `specs`: shape and dtype (float32 or float64) of each variable, in the order gradients are
  // indexed; ValueError for another dtype. The communicator must outlive the reducer.
  // The first bucket holds at most `first_bucket_bytes` (unless one gradient is larger), the
  // others at most `bucket_bytes`.
  GradientReducer(collectives::Communicator& comm, std::vector<TensorSpec> specs, int64_t bucket_bytes,
                  int64_t first_bucket_bytes);
  ~GradientReducer();

  // Starts a step: every gradient is multiplied by `weight` before the sum over processes.
  void begin_step(double weight);
  // Takes gradient `index` (final); starts every bucket that became complete.
  void ready(size_t index, const Tensor& gradient);
  std::function<void(size_t, const Tensor&)> ready_fn() {
    return [this](size_t i, const Tensor& g) { ready(i, g); };
  }
  // Takes the gradients not yet given to ready() from `local` (undefined = none here), waits for
  // every bucket, and returns the weighted sums: undefined where no process had a gradient.
  TensorList finish(const TensorList& local);

  size_t num_buckets() const { return buckets_.size(); }
  // Seconds finish() spent blocked waiting for allreduces, summed since construction.
  double wait_seconds() const { return wait_seconds_; }

 private:
  struct Bucket;
  void start_ready_buckets();
  collectives::Communicator& comm_;
  std::vector<TensorSpec> specs_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<size_t> bucket_of_, offset_of_;  // per variable
  std::vector<bool> given_;
  Device grad_device_ = Device::cpu();  // where the gradients (and the model) live
  size_t next_to_start_ = 0;
  double weight_ = 1;
  double wait_seconds_ = 0;
};

}  // namespace keras::distribution
