// Batch copies by the consumer's OpenMP team, or shared between the consumer and an
// idle-priority thread (see dataset_copy.h).
#include "keras/data/dataset_copy.h"

#include <immintrin.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "backend/omp_wait_policy.h"
#include "backend/threads.h"

namespace keras::data::detail {

namespace {

// About 32 KB a chunk: small enough that a consumer never waits long for a chunk the idle thread
// holds, large enough that claiming costs nothing next to the copy.
constexpr size_t kChunkBytes = size_t{32} << 10;
// Below this the consumer copies alone: forking the team costs more than it saves.
constexpr size_t kTeamBytes = size_t{256} << 10;

// The copier a ScopedBatchCopier asks for, or -1.
std::atomic<int> copier_override{-1};
}  // namespace

BatchCopier batch_copier() {
  if (const int forced = copier_override.load(std::memory_order_relaxed); forced >= 0)
    return static_cast<BatchCopier>(forced);
  // Asked for each pass (microseconds), so that set_num_threads between passes counts. A team
  // smaller than the cores leaves a core to the idle thread however its threads wait.
  const bool every_core_spins = num_threads() >= available_cores() && omp_threads_spin();
  return every_core_spins ? BatchCopier::team : BatchCopier::idle_thread;
}

ScopedBatchCopier::ScopedBatchCopier(BatchCopier copier)
    : previous_(copier_override.exchange(static_cast<int>(copier), std::memory_order_relaxed)) {}
ScopedBatchCopier::~ScopedBatchCopier() { copier_override.store(previous_, std::memory_order_relaxed); }

Element copy_batch(const Node& source, const std::vector<int64_t>& rows) {
  const auto n = static_cast<int64_t>(rows.size());
  Element batch = source.gather_allocate(n);
  size_t bytes = 0;
  for (const Tensor& t : batch) bytes += t.nbytes();
  const bool team = !on_pipeline_thread() && bytes >= kTeamBytes;
  // Nobody else copies this batch, so equal shares balance it without claiming chunks.
#pragma omp parallel if (team)
  {
    const int64_t part = omp_get_thread_num(), parts = omp_get_num_threads();
    source.gather_rows(rows, n * part / parts, n * (part + 1) / parts, batch);
  }
  return batch;
}

namespace {

constexpr size_t kLine = 64;

// `bytes` (a multiple of 16) from `from` to 16-byte-aligned `to`, with stores that bypass the
// caches (SSE2, every x86-64).
void stream_copy(char* to, const char* from, size_t bytes) {
  for (size_t o = 0; o < bytes; o += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + o), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + o)));
}

// Random rows are bound by memory latency: one row after another leaves the hardware prefetcher
// ramping up on each row, while a cache line of each of eight rows in turn keeps eight streams in
// flight (128 rows of 3 KB from 188 MB with cold caches: 51-71 us instead of 85-100 on one thread).
template <bool kStream>
void copy_interleaved(char* dst, const char* src, size_t row_bytes, const int64_t* idx, int64_t n) {
  constexpr int64_t kRows = 8;
  auto copy = [](char* to, const char* from, size_t bytes) {
    if constexpr (kStream)
      stream_copy(to, from, bytes);
    else
      std::memcpy(to, from, bytes);
  };
  for (int64_t r = 0; r < n; r += kRows) {
    const int64_t k = std::min(kRows, n - r);
    const char* from[kRows];
    for (int64_t j = 0; j < k; ++j) from[j] = src + static_cast<size_t>(idx[r + j]) * row_bytes;
    char* to = dst + static_cast<size_t>(r) * row_bytes;
    size_t o = 0;
    for (; o + kLine <= row_bytes; o += kLine)
      for (int64_t j = 0; j < k; ++j) copy(to + static_cast<size_t>(j) * row_bytes + o, from[j] + o, kLine);
    if (o < row_bytes)
      for (int64_t j = 0; j < k; ++j) copy(to + static_cast<size_t>(j) * row_bytes + o, from[j] + o, row_bytes - o);
  }
}

}  // namespace

void copy_rows(char* dst, const char* src, size_t row_bytes, const int64_t* idx, int64_t n) {
  if (row_bytes < 4 * kLine) {
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(dst + static_cast<size_t>(r) * row_bytes, src + static_cast<size_t>(idx[r]) * row_bytes, row_bytes);
    return;
  }
  // The batch goes to memory, not to this core's cache: the step's first layer then reads it as
  // it reads a pre-built batch, prefetched in the shadow of its arithmetic. Cached copies cost
  // more wherever another core reads them: where a host puts the two vCPUs on different core
  // complexes (AMD EPYC), each such line takes 300+ ns, and next() of 128 rows of 3 KB took
  // 100-110 us a step there instead of 28-32 (pipeline_benchmark, 2 threads, team copier).
  // Whole cache lines only: a streamed line left partly written is flushed as a slow partial write.
  if (row_bytes % kLine == 0 && reinterpret_cast<uintptr_t>(dst) % kLine == 0) {
    copy_interleaved<true>(dst, src, row_bytes, idx, n);
    _mm_sfence();  // the stores are visible before the caller reports the rows copied
  } else {
    copy_interleaved<false>(dst, src, row_bytes, idx, n);
  }
}

BatchCopy::BatchCopy(std::shared_ptr<const Node> source, std::vector<int64_t> rows, Element empty_batch)
    : source_(std::move(source)), rows_(std::move(rows)), batch_(std::move(empty_batch)) {
  const auto n = static_cast<int64_t>(rows_.size());
  for (const Tensor& t : batch_) row_bytes_ += n ? t.nbytes() / static_cast<size_t>(n) : 0;
  chunk_rows_ = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / std::max<size_t>(row_bytes_, 1)));
  chunks_ = (n + chunk_rows_ - 1) / chunk_rows_;
}

std::optional<int64_t> BatchCopy::claim() {
  const int64_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed);
  if (c >= chunks_) return std::nullopt;
  return c;
}

void BatchCopy::copy(int64_t chunk) {
  const int64_t begin = chunk * chunk_rows_;
  source_->gather_rows(rows_, begin, std::min<int64_t>(begin + chunk_rows_, static_cast<int64_t>(rows_.size())), batch_);
  if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks_) {
    std::lock_guard lock(mu_);  // so that a consumer between its check and its wait still wakes
    done_cv_.notify_all();
  }
}

Element BatchCopy::finish(std::chrono::microseconds max_wait) {
  const int64_t left = std::max<int64_t>(0, chunks_ - next_chunk_.load(std::memory_order_relaxed));
  const bool team = !on_pipeline_thread() && static_cast<size_t>(left * chunk_rows_) * row_bytes_ >= kTeamBytes;
#pragma omp parallel if (team)
  while (copy_one_chunk()) {
  }
  auto all_done = [&] { return done_.load(std::memory_order_acquire) == chunks_; };
  std::unique_lock lock(mu_);
  if (done_cv_.wait_for(lock, max_wait, all_done)) return std::move(batch_);
  lock.unlock();
  return copy_batch(*source_, rows_);
}

namespace {

// A thread at SCHED_IDLE priority that copies chunks of the batches handed to it, oldest first.
// Starts with the first batch; the destructor stops and joins it. Where the scheduler refuses idle
// priority the thread is stopped again and the consumer copies everything itself.
class IdleCopier {
 public:
  IdleCopier() = default;
  ~IdleCopier();
  IdleCopier(const IdleCopier&) = delete;
  IdleCopier& operator=(const IdleCopier&) = delete;
  void add(std::shared_ptr<BatchCopy> batch);

 private:
  void run();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<BatchCopy>> queue_;
  std::atomic<bool> stop_{false};  // set under mu_; also read between chunks without it
  bool refused_ = false;
  std::thread thread_;
};

IdleCopier::~IdleCopier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  // On a machine whose cores are all busy an idle-priority thread may wait long for a core even
  // just to see the stop; back at normal priority it exits at once. Best effort: the scheduler
  // may refuse an unprivileged thread the way back.
  sched_param param{};
  pthread_setschedparam(thread_.native_handle(), SCHED_OTHER, &param);
  thread_.join();
}

void IdleCopier::add(std::shared_ptr<BatchCopy> batch) {
  std::unique_lock lock(mu_);
  if (refused_) return;
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { run(); });
    sched_param param{};
    if (pthread_setschedparam(thread_.native_handle(), SCHED_IDLE, &param) != 0) {
      refused_ = stop_ = true;
      lock.unlock();
      cv_.notify_all();
      thread_.join();
      return;
    }
  }
  // Batches the consumer has already copied (the idle thread got no core meanwhile) are dropped
  // here, so the queue never holds more than the prefetch buffer.
  while (!queue_.empty() && queue_.front()->all_claimed()) queue_.pop_front();
  queue_.push_back(std::move(batch));
  lock.unlock();
  cv_.notify_one();
}

void IdleCopier::run() {
  PipelineThreadScope pipeline_thread;
  while (true) {
    std::shared_ptr<BatchCopy> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    while (!stop_.load(std::memory_order_relaxed) && batch->copy_one_chunk()) {
    }
  }
}

class RowPrefetchIterator : public IteratorImpl {
 public:
  RowPrefetchIterator(std::unique_ptr<IteratorImpl> input, size_t capacity)
      : input_(std::move(input)), capacity_(capacity) {}

  std::optional<Element> next() override {
    pick_ahead();
    if (ahead_.empty()) return std::nullopt;
    std::shared_ptr<BatchCopy> batch = std::move(ahead_.front());
    ahead_.pop_front();
    pick_ahead();  // the idle thread works on the following batches during this step
    return batch->finish();
  }

 private:
  void pick_ahead() {
    while (input_ && ahead_.size() < capacity_) {
      auto pending = input_->next_pending();
      if (!pending) {
        input_.reset();
        return;
      }
      Element empty = pending->source->gather_allocate(static_cast<int64_t>(pending->rows.size()));
      auto batch = std::make_shared<BatchCopy>(pending->source, std::move(pending->rows), std::move(empty));
      ahead_.push_back(batch);
      copier_.add(std::move(batch));
    }
  }

  std::unique_ptr<IteratorImpl> input_;  // null once exhausted
  const size_t capacity_;
  std::deque<std::shared_ptr<BatchCopy>> ahead_;
  IdleCopier copier_;
};

}  // namespace

std::unique_ptr<IteratorImpl> make_row_prefetch(std::unique_ptr<IteratorImpl> input, size_t capacity,
                                                BatchCopier copier) {
  if (copier == BatchCopier::team) return input;
  return std::make_unique<RowPrefetchIterator>(std::move(input), capacity);
}

}  // namespace keras::data::detail
