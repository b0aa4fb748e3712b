// Dataset stages that own threads: map (parallel, order-preserving) and prefetch (a background
// thread; batches of random source rows take the lighter path of dataset_copy.h instead).
//
// Both follow one rule: the destructor sets `stop_`, wakes every waiter and joins every thread
// before the input iterator is destroyed, so no thread outlives its Iterator, whether the pass
// ended, was abandoned, or an exception unwound through the consumer.
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "backend/autodiff.h"
#include "keras/data/dataset.h"
#include "keras/data/dataset_copy.h"
#include "keras/data/dataset_stage.h"

namespace keras::data {

namespace {

using detail::IteratorImpl;
using detail::Node;
using detail::UnaryNode;

// What a producer hands to the consumer: an element, the end, or an error.
struct Slot {
  std::optional<Element> element;
  std::exception_ptr error;
};

Element run_map_fn(const MapFn& fn, const Element& e) {
  NoGradGuard no_grad;  // pipeline work is never differentiated
  return fn(e);
}

class SequentialMapIterator : public IteratorImpl {
 public:
  SequentialMapIterator(std::unique_ptr<IteratorImpl> input, std::shared_ptr<const MapFn> fn)
      : input_(std::move(input)), fn_(std::move(fn)) {}
  std::optional<Element> next() override {
    auto e = input_->next();
    if (!e) return std::nullopt;
    return run_map_fn(*fn_, *e);
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  std::shared_ptr<const MapFn> fn_;
};

// Workers take input elements in order (under input_mu_, which numbers them), apply fn without
// any lock, and file the result under its number; the consumer emits numbers in order. At most
// `window_` elements are claimed but not yet emitted, which bounds memory.
class ParallelMapIterator : public IteratorImpl {
 public:
  ParallelMapIterator(std::unique_ptr<IteratorImpl> input, std::shared_ptr<const MapFn> fn, int threads)
      : input_(std::move(input)), fn_(std::move(fn)), window_(2 * static_cast<int64_t>(threads)) {
    workers_.reserve(static_cast<size_t>(threads));
    try {
      for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    } catch (...) {
      shutdown();
      throw;
    }
  }
  ~ParallelMapIterator() override { shutdown(); }

  std::optional<Element> next() override {
    std::unique_lock lock(mu_);
    consumer_cv_.wait(lock, [&] { return results_.count(next_out_) || next_out_ >= end_; });
    auto it = results_.find(next_out_);
    if (it == results_.end()) return std::nullopt;
    Slot slot = std::move(it->second);
    results_.erase(it);
    ++next_out_;
    lock.unlock();
    worker_cv_.notify_all();
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.element);
  }

 private:
  void work() {
    detail::PipelineThreadScope pipeline_thread;
    while (true) {
      {
        std::unique_lock lock(mu_);
        worker_cv_.wait(lock, [&] { return stop_ || input_done_ || claimed_ - next_out_ < window_; });
        if (stop_ || input_done_) return;
        ++claimed_;
      }
      int64_t seq;
      Slot slot;
      bool last = false;
      {
        std::lock_guard in_lock(input_mu_);
        if (input_exhausted_ || stop_flag()) {
          release_claim();
          return;
        }
        seq = next_seq_++;
        try {
          slot.element = input_->next();
          if (!slot.element) last = true;
        } catch (...) {
          slot.error = std::current_exception();
          last = true;  // an input error ends the stream after it
        }
        if (last) input_exhausted_ = true;
      }
      if (slot.element) {
        try {
          slot.element = run_map_fn(*fn_, *slot.element);
        } catch (...) {
          slot.element.reset();
          slot.error = std::current_exception();
        }
      }
      {
        std::lock_guard lock(mu_);
        if (slot.element || slot.error) results_.emplace(seq, std::move(slot));
        if (last) {
          end_ = slot.error ? seq + 1 : seq;
          input_done_ = true;
        }
      }
      consumer_cv_.notify_all();
      if (last) worker_cv_.notify_all();
    }
  }
  bool stop_flag() {
    std::lock_guard lock(mu_);
    return stop_;
  }
  void release_claim() {
    std::lock_guard lock(mu_);
    --claimed_;
  }
  void shutdown() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    worker_cv_.notify_all();
    for (auto& t : workers_)
      if (t.joinable()) t.join();
    workers_.clear();
  }

  std::unique_ptr<IteratorImpl> input_;
  std::shared_ptr<const MapFn> fn_;
  const int64_t window_;
  std::mutex input_mu_;          // guards input_, next_seq_, input_exhausted_
  int64_t next_seq_ = 0;
  bool input_exhausted_ = false;
  std::mutex mu_;                // guards everything below
  std::condition_variable worker_cv_, consumer_cv_;
  std::map<int64_t, Slot> results_;
  int64_t claimed_ = 0;
  int64_t next_out_ = 0;
  int64_t end_ = INT64_MAX;
  bool input_done_ = false;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

class MapNode : public UnaryNode {
 public:
  MapNode(std::shared_ptr<const Node> in, MapFn fn, int threads)
      : UnaryNode(std::move(in)), fn_(std::make_shared<const MapFn>(std::move(fn))), threads_(threads) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    if (threads_ <= 1) return std::make_unique<SequentialMapIterator>(input_->make_iterator(), fn_);
    return std::make_unique<ParallelMapIterator>(input_->make_iterator(), fn_, threads_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return threads_ > 1 ? "ParallelMap" : "Map"; }

 private:
  std::shared_ptr<const MapFn> fn_;
  int threads_;
};

// ---- prefetch ----

class PrefetchIterator : public IteratorImpl {
 public:
  PrefetchIterator(std::unique_ptr<IteratorImpl> input, size_t capacity)
      : input_(std::move(input)), capacity_(capacity), thread_([this] { produce(); }) {}
  ~PrefetchIterator() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    space_cv_.notify_all();
    thread_.join();
  }

  std::optional<Element> next() override {
    if (finished_) return std::nullopt;
    std::unique_lock lock(mu_);
    ready_cv_.wait(lock, [&] { return !queue_.empty(); });
    Slot slot = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    space_cv_.notify_one();
    if (slot.error) {
      finished_ = true;
      std::rethrow_exception(slot.error);
    }
    if (!slot.element) {
      finished_ = true;
      return std::nullopt;
    }
    return std::move(slot.element);
  }

 private:
  void produce() {
    detail::PipelineThreadScope pipeline_thread;
    while (true) {
      Slot slot;
      try {
        slot.element = input_->next();
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool last = !slot.element;
      {
        std::unique_lock lock(mu_);
        space_cv_.wait(lock, [&] { return stop_ || queue_.size() < capacity_; });
        if (stop_) return;
        queue_.push_back(std::move(slot));
      }
      ready_cv_.notify_one();
      if (last) return;
    }
  }

  std::unique_ptr<IteratorImpl> input_;  // used by the producer thread only
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable ready_cv_, space_cv_;
  std::deque<Slot> queue_;
  bool stop_ = false;
  bool finished_ = false;  // consumer side only
  std::thread thread_;     // last member: starts after everything it touches exists
};

class PrefetchNode : public UnaryNode {
 public:
  PrefetchNode(std::shared_ptr<const Node> in, size_t capacity) : UnaryNode(std::move(in)), capacity_(capacity) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    auto input = input_->make_iterator();
    if (const Node* source = input->row_list_source(); source && source->gathers_in_parts())
      return detail::make_row_prefetch(std::move(input), capacity_);
    return std::make_unique<PrefetchIterator>(std::move(input), capacity_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "Prefetch"; }

 private:
  size_t capacity_;
};

}  // namespace

Dataset Dataset::map(MapFn fn, int64_t num_parallel_calls) const {
  if (!fn) fail<ValueError>("Dataset.map", "a function", "an empty std::function");
  if (num_parallel_calls < 1 && num_parallel_calls != AUTOTUNE)
    fail<ValueError>("Dataset.map", "num_parallel_calls >= 1 or AUTOTUNE (-1)", std::to_string(num_parallel_calls));
  int threads = static_cast<int>(num_parallel_calls);
  if (num_parallel_calls == AUTOTUNE) threads = std::max(1u, std::thread::hardware_concurrency());
  return Dataset(std::make_shared<MapNode>(node_, std::move(fn), threads));
}

Dataset Dataset::prefetch(int64_t buffer_size) const {
  if (buffer_size < 1 && buffer_size != AUTOTUNE)
    fail<ValueError>("Dataset.prefetch", "buffer_size >= 1 or AUTOTUNE (-1)", std::to_string(buffer_size));
  return Dataset(std::make_shared<PrefetchNode>(node_, buffer_size == AUTOTUNE ? 2 : static_cast<size_t>(buffer_size)));
}

}  // namespace keras::data
