// Copying a batch of random source rows (internal to keras/dataset*.cpp): by the consumer's
// OpenMP team, or shared between an idle-priority thread and the consumer.
//
// Random rows are bound by memory latency (128 rows of 3 KB: 50-100 us on one thread). On a
// machine whose cores all run the training step's OpenMP team, a background thread doing that
// copy at normal priority preempts a team member and stalls the whole team; the consumer doing it
// alone delays the step. Which way is cheapest depends on how the team waits between its parallel
// regions (backend/omp_wait_policy.h):
// - threads that sleep there (OMP_WAIT_POLICY=passive, or a team smaller than the cores) leave
//   cores idle in every serial stretch of the step: a prefetched batch is split into chunks that
//   a SCHED_IDLE thread copies on such a core, and the consumer copies whatever is left when it
//   needs the batch;
// - threads that spin there (libgomp's default) leave no idle core: a SCHED_IDLE thread then only
//   runs by taking a core from a spinning team member for a scheduler slice, stalling the team's
//   next region, and the consumer waits for the chunks it holds. So nothing runs beside the team:
//   the consumer's team copies each batch, rows split evenly, when the consumer takes it (128 rows
//   of 3 KB from 188 MB: at best 66 us on one thread, 38 us on two). Rows of whole cache lines
//   (256 bytes or more) into a line-aligned batch are stored past the caches (copy_rows says why).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "keras/data/dataset_stage.h"

namespace keras::data::detail {

// Who copies the batches that a prefetch over row lists (make_row_prefetch) hands out.
enum class BatchCopier {
  idle_thread,  // chunks copied ahead by a SCHED_IDLE thread, the rest by the consumer
  team,         // the consumer's OpenMP team, the whole batch, when the consumer takes it
};

// The copier for this process: `team` where the OpenMP team has a thread on every core
// (keras::num_threads() >= available_cores()) and they spin between parallel regions
// (omp_threads_spin()), else `idle_thread`; a live ScopedBatchCopier overrides it.
BatchCopier batch_copier();

// While it lives, prefetch stages made on any thread use `copier`, whatever the OpenMP settings
// (for tests of either path). Scopes nest, each restoring the one before; open them on one thread.
class ScopedBatchCopier {
 public:
  explicit ScopedBatchCopier(BatchCopier copier);
  ~ScopedBatchCopier();
  ScopedBatchCopier(const ScopedBatchCopier&) = delete;
  ScopedBatchCopier& operator=(const ScopedBatchCopier&) = delete;

 private:
  int previous_;
};

// Rows `rows` of `source` (a Node that gathers_in_parts) as a new batch, copied by the calling
// thread's OpenMP team, each thread an equal share of the rows, when the batch is large enough to
// pay for the fork and the caller is not a pipeline thread; else by the caller alone.
Element copy_batch(const Node& source, const std::vector<int64_t>& rows);

// One batch: `rows` of `source` copied into `empty_batch` (from source.gather_allocate), in
// chunks that any number of threads claim and copy.
class BatchCopy {
 public:
  BatchCopy(std::shared_ptr<const Node> source, std::vector<int64_t> rows, Element empty_batch);
  // Copies one unclaimed chunk; false when none is left. Any thread, any time.
  bool copy_one_chunk() {
    auto chunk = claim();
    if (chunk) copy(*chunk);
    return chunk.has_value();
  }
  // The two halves of copy_one_chunk: the next unclaimed chunk, then its copy.
  std::optional<int64_t> claim();
  void copy(int64_t chunk);
  // Copies every unclaimed chunk (with the OpenMP team when much is left and the caller is not a
  // pipeline thread), waits up to `max_wait` for chunks other threads are copying, and returns
  // the batch. If they are not done by then (an idle-priority thread that gets no core on a
  // machine busy with other work), it returns a fresh copy of the whole batch instead and leaves
  // the old tensors to the late copier. Called once, by the consumer.
  Element finish(std::chrono::microseconds max_wait = std::chrono::milliseconds(2));
  bool all_claimed() const { return next_chunk_.load(std::memory_order_relaxed) >= chunks_; }

 private:
  std::shared_ptr<const Node> source_;
  std::vector<int64_t> rows_;
  Element batch_;
  int64_t chunk_rows_ = 1, chunks_ = 0;
  size_t row_bytes_ = 0;  // all components together
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<int64_t> done_{0};
  std::mutex mu_;  // with done_cv_: the consumer's wait for the last chunk
  std::condition_variable done_cv_;
};

// Copies rows idx[0..n) of `src` (rows of `row_bytes` bytes) to rows 0..n-1 of `dst`. Any
// thread; threads may fill disjoint row ranges of one batch at once.
void copy_rows(char* dst, const char* src, size_t row_bytes, const int64_t* idx, int64_t n);

// The prefetch stage over `input` when input->row_list_source() gathers in parts: no producer
// thread (picking rows costs microseconds). With BatchCopier::idle_thread, up to `capacity`
// batches picked ahead and copied by an idle-priority thread, each finished by the consumer when
// it takes it; with BatchCopier::team, `input` itself, whose batches the consumer's team copies
// as it takes them (nothing to do ahead: no core is free for it).
std::unique_ptr<IteratorImpl> make_row_prefetch(std::unique_ptr<IteratorImpl> input, size_t capacity,
                                                BatchCopier copier = batch_copier());

}  // namespace keras::data::detail
