// Dataset.shuffle: the tf.data shuffle buffer, seeded with Philox so that an order is a pure
// function of (seed, epoch).
#include <atomic>

#include "backend/random.h"
#include "keras/data/dataset.h"
#include "keras/data/dataset_stage.h"

namespace keras::data {

namespace {

using detail::IteratorImpl;
using detail::Node;
using detail::UnaryNode;

// The tf.data shuffle buffer: each output is drawn uniformly from up to `capacity` items; the
// drawn slot is refilled by the last item and the caller tops the buffer up again.
template <class T>
class ShuffleBuffer {
 public:
  ShuffleBuffer(size_t capacity, uint64_t seed) : capacity_(capacity), gen_(seed) {
    for (uint64_t& d : draws_) d = draw();
  }
  bool full() const { return items_.size() >= capacity_; }
  bool empty() const { return items_.empty(); }
  void push(T item) { items_.push_back(std::move(item)); }
  T pop_random() {
    const size_t pick = static_cast<size_t>(take_draw() % items_.size());
    T out = std::move(items_[pick]);
    if (pick != items_.size() - 1) items_[pick] = std::move(items_.back());
    items_.pop_back();
    return out;
  }

 private:
  // A large buffer is read at random (60,000 indices: a cache miss on nearly every pop, ~20 us a
  // batch of 128), so draws are made kAhead pops early and the slot each will pick is prefetched.
  // The draws and their order are unchanged. That later pop sees the buffer at its present size
  // (refilled meanwhile) or kAhead smaller (draining): both candidate slots are prefetched.
  static constexpr size_t kAhead = 16;
  uint64_t draw() {
    uint32_t w[4];
    philox4x32(gen_.seed(), gen_.advance(1), w);
    return (static_cast<uint64_t>(w[0]) << 32) | w[1];
  }
  uint64_t take_draw() {
    const uint64_t now = draws_[next_];
    const uint64_t later = draws_[next_] = draw();
    next_ = (next_ + 1) % kAhead;
    const size_t n = items_.size();
    __builtin_prefetch(&items_[later % n]);
    if (n > kAhead) __builtin_prefetch(&items_[later % (n - kAhead)]);
    return now;
  }

  size_t capacity_;
  Generator gen_;
  std::vector<T> items_;
  uint64_t draws_[kAhead];
  size_t next_ = 0;
};

class ShuffleIterator : public IteratorImpl {
 public:
  ShuffleIterator(std::unique_ptr<IteratorImpl> input, int64_t buffer_size, uint64_t seed)
      : input_(std::move(input)), buffer_(static_cast<size_t>(buffer_size), seed) {}

  std::optional<Element> next() override {
    while (input_ && !buffer_.full()) {
      auto e = input_->next();
      if (!e) {
        input_.reset();
        break;
      }
      buffer_.push(std::move(*e));
    }
    if (buffer_.empty()) return std::nullopt;
    return buffer_.pop_random();
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  ShuffleBuffer<Element> buffer_;
};

// The same draw over a random-access input, buffering indices: the order equals
// ShuffleIterator's for the same seed, without holding buffer_size elements.
class IndexShuffleIterator : public IteratorImpl {
 public:
  IndexShuffleIterator(std::shared_ptr<const Node> input, int64_t buffer_size, uint64_t seed)
      : input_(std::move(input)), size_(input_->cardinality()), buffer_(static_cast<size_t>(buffer_size), seed) {}

  std::optional<Element> next() override {
    while (next_index_ < size_ && !buffer_.full()) buffer_.push(next_index_++);
    if (buffer_.empty()) return std::nullopt;
    return input_->at(buffer_.pop_random());
  }
  const Node* index_source() const override { return input_.get(); }
  std::optional<int64_t> next_index() override {
    while (next_index_ < size_ && !buffer_.full()) buffer_.push(next_index_++);
    if (buffer_.empty()) return std::nullopt;
    return buffer_.pop_random();
  }

 private:
  std::shared_ptr<const Node> input_;
  int64_t size_;
  int64_t next_index_ = 0;
  ShuffleBuffer<int64_t> buffer_;
};

class ShuffleNode : public UnaryNode {
 public:
  ShuffleNode(std::shared_ptr<const Node> in, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : UnaryNode(std::move(in)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    uint64_t epoch_seed = seed_;
    if (reshuffle_) {
      // Epoch 0 uses the seed itself (the order reshuffle off would repeat); epoch k > 0 takes
      // its seed from Philox(seed, k): reproducible, and unrelated across epochs.
      const uint64_t k = epochs_started_.fetch_add(1);
      if (k > 0) {
        uint32_t w[4];
        philox4x32(seed_, k, w);
        epoch_seed = (static_cast<uint64_t>(w[0]) << 32) | w[1];
      }
    }
    if (input_->random_access())
      return std::make_unique<IndexShuffleIterator>(input_, buffer_size_, epoch_seed);
    return std::make_unique<ShuffleIterator>(input_->make_iterator(), buffer_size_, epoch_seed);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "Shuffle"; }

 private:
  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
  // Shared by every copy of the Dataset handle, as tf.data's per-dataset seed generator.
  mutable std::atomic<uint64_t> epochs_started_{0};
};

}  // namespace

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed, bool reshuffle_each_iteration) const {
  if (buffer_size < 1) fail<ValueError>("Dataset.shuffle", "buffer_size >= 1", std::to_string(buffer_size));
  uint64_t s = seed ? *seed : global_generator().next_seed();
  return Dataset(std::make_shared<ShuffleNode>(node_, buffer_size, s, reshuffle_each_iteration));
}

}  // namespace keras::data
