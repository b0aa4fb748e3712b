// Data-parallel training over processes, as Keras 3's keras.distribution.DataParallel (and
// tf.distribute's MultiWorkerMirroredStrategy): every process holds the whole model, takes its
// share of each global batch, and the gradients are averaged before each update, so N processes
// with global batch B take the same steps as one process with batch B.
//
//   // mpirun -np 2 ./train
//   namespace dist = keras::distribution;
//   dist::set_distribution(dist::DataParallel());   // or: auto scope = dist::DataParallel().scope();
//   model.fit(x, y, {.batch_size = 256});           // 128 rows per process, global figures logged
//
// What fit does under it (keras/models/trainer.cpp):
// - weights and optimizer state are broadcast from process 0 when fit starts; shuffles use
//   process 0's seed, so every process walks the same global batches;
// - a global batch of B rows gives process r rows [r*B/N ...) as shard_range says: the first B % N
//   processes take one row more; a process whose share is empty still takes part in every
//   collective (with zero gradients);
// - gradients go into buckets of about `bucket_bytes` in reverse layer order, each averaged by a
//   background allreduce started as soon as its gradients are final (overlapping backward);
// - metrics are summed over processes from their states (Metric::state), so every process logs
//   the global value; non-trainable float variables (BatchNormalization's moving statistics) are
//   averaged at the end of each epoch; BatchNormalization({.synchronized = true}) uses the global
//   batch statistics in every step;
// - callbacks that write or print (progress bar, ModelCheckpoint, TensorBoard, CSVLogger) run on
//   process 0 only; EarlyStopping and ReduceLROnPlateau see the global figures, so all processes
//   stop together; BackupAndRestore writes on process 0 and every process resumes from it;
// - an exception in one process ends every process (MPI_Abort) after printing which process failed
//   and why; a process that dies is reported by mpirun, which ends the others.
// predict() is not sharded: every process predicts every row.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>

#include "backend/collectives/communicator.h"

namespace keras::distribution {

struct DataParallelOptions {
  // The group to train over; null = collectives::world() (every process of the mpirun job).
  std::shared_ptr<collectives::Communicator> communicator;
  // Gradient bucket size (bytes): larger buckets mean fewer, more efficient allreduces; smaller
  // ones start sooner during backward. PyTorch DDP's default.
  int64_t bucket_bytes = int64_t{25} << 20;
  // The first bucket (the last layers' gradients) is kept small, so that communication starts
  // early in backward (as DDP's 1 MB first bucket).
  int64_t first_bucket_bytes = int64_t{1} << 20;
};

class DataParallel {
 public:
  explicit DataParallel(DataParallelOptions options = {});
  collectives::Communicator& communicator() const;
  int num_processes() const { return communicator().size(); }
  int process_id() const { return communicator().rank(); }
  const DataParallelOptions& options() const { return options_; }

  // Makes this the distribution in force until the returned object is destroyed (Keras's
  // `with distribution.scope():`); scopes nest.
  class Scope {
   public:
    ~Scope();
    Scope(Scope&&) = delete;
    Scope& operator=(Scope&&) = delete;

   private:
    friend class DataParallel;
    explicit Scope(std::shared_ptr<const DataParallel> previous) : previous_(std::move(previous)) {}
    std::shared_ptr<const DataParallel> previous_;
  };
  [[nodiscard]] std::unique_ptr<Scope> scope() const;

 private:
  DataParallelOptions options_;
};

// The distribution in force (keras.distribution.distribution()); null when training is local.
std::shared_ptr<const DataParallel> distribution();
// Sets it (keras.distribution.set_distribution); nullptr makes training local again.
void set_distribution(std::shared_ptr<const DataParallel> distribution);
inline void set_distribution(const DataParallel& distribution) {
  set_distribution(std::make_shared<const DataParallel>(distribution));
}

// keras.distribution.initialize: joins the job this process was launched in (MPI under mpirun;
// otherwise a job of one process). Optional: the first use of the world does it. Returns the
// number of processes.
int initialize();
int num_processes();  // of the world
int process_id();     // rank in the world

// The rows [first, last) of a global batch of `rows` that process `rank` of `size` takes.
std::pair<int64_t, int64_t> shard_range(int64_t rows, int rank, int size);

}  // namespace keras::distribution
