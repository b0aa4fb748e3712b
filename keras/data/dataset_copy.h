// Copying a batch of random source rows, shared between the consumer and an idle-priority thread
// (internal to keras/dataset*.cpp).
//
// Random rows are bound by memory latency (128 rows of 3 KB: 50-100 us on one thread). On a
// machine whose cores all run the training step's OpenMP team, a background thread doing that
// copy at normal priority preempts a team member and stalls the whole team; the consumer doing it
// delays the step. So a prefetched batch is split into chunks: a SCHED_IDLE thread copies chunks
// whenever a core has nothing else to run (serial stretches of the step, passive OpenMP threads
// waiting), and the consumer copies whatever is left when it needs the batch
// (apps/pipeline_benchmark, ~1 s epochs: with OMP_WAIT_POLICY=passive the loop waits 8-9 ms an
// epoch for batches; spinning OpenMP threads leave the idle thread almost no core, 27-34 ms).
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
// thread (picking rows costs microseconds), but up to `capacity` batches picked ahead and copied by
// an idle-priority thread; the consumer finishes each copy when it takes the batch.
std::unique_ptr<IteratorImpl> make_row_prefetch(std::unique_ptr<IteratorImpl> input, size_t capacity);

}  // namespace keras::data::detail
