// Single-threaded Dataset stages: batch, repeat, take, skip, cache.
#include <algorithm>
#include <mutex>

#include "keras/data/dataset.h"
#include "keras/data/dataset_stage.h"

namespace keras::data {

namespace {

using detail::IteratorImpl;
using detail::Node;
using detail::Pending;
using detail::UnaryNode;

// ---- batch ----

class BatchIterator : public IteratorImpl {
 public:
  BatchIterator(std::unique_ptr<IteratorImpl> input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  std::optional<Element> next() override {
    auto p = next_pending();
    if (!p) return std::nullopt;
    return std::move(*p).resolve();
  }

  const Node* row_list_source() const override { return input_ ? input_->index_source() : nullptr; }
  std::optional<Pending> next_pending() override {
    if (!input_) return std::nullopt;
    if (const Node* source = input_->index_source()) return next_rows(*source);
    std::vector<Element> rows;
    rows.reserve(static_cast<size_t>(batch_size_));
    while (static_cast<int64_t>(rows.size()) < batch_size_) {
      auto e = input_->next();
      if (!e) {
        input_.reset();
        break;
      }
      rows.push_back(std::move(*e));
    }
    const int64_t first_index = index_;
    index_ += static_cast<int64_t>(rows.size());
    if (rows.empty() || (drop_remainder_ && static_cast<int64_t>(rows.size()) < batch_size_)) return std::nullopt;
    const size_t ncomp = rows[0].size();
    const std::string batch_where = "Dataset.batch (batch of elements " + std::to_string(first_index) + ".." +
                                    std::to_string(index_ - 1) + ")";
    for (size_t i = 1; i < rows.size(); ++i)
      if (rows[i].size() != ncomp)
        fail<ValueError>(batch_where, "element " + std::to_string(first_index + static_cast<int64_t>(i)) + " to have " +
                                          std::to_string(ncomp) + " components like element " +
                                          std::to_string(first_index),
                         std::to_string(rows[i].size()));
    Element out;
    out.reserve(ncomp);
    std::vector<Tensor> parts(rows.size());
    for (size_t c = 0; c < ncomp; ++c) {
      for (size_t i = 0; i < rows.size(); ++i) parts[i] = std::move(rows[i][c]);
      out.push_back(
          stack(parts, ncomp == 1 ? batch_where : batch_where + ", component " + std::to_string(c), first_index));
    }
    return Pending{std::move(out), nullptr, {}};
  }

 private:
  // Rows of a random-access source: indices in, one gather per batch, no per-row tensors.
  std::optional<Pending> next_rows(const Node& source) {
    std::vector<int64_t> idx;
    idx.reserve(static_cast<size_t>(batch_size_));
    while (static_cast<int64_t>(idx.size()) < batch_size_) {
      auto i = input_->next_index();
      if (!i) break;
      idx.push_back(*i);
    }
    index_ += static_cast<int64_t>(idx.size());
    if (static_cast<int64_t>(idx.size()) < batch_size_) input_.reset();
    if (idx.empty() || (drop_remainder_ && static_cast<int64_t>(idx.size()) < batch_size_)) return std::nullopt;
    return Pending{std::nullopt, source.shared_from_this(), std::move(idx)};
  }

  std::unique_ptr<IteratorImpl> input_;
  int64_t batch_size_;
  bool drop_remainder_;
  int64_t index_ = 0;  // input elements consumed, for error messages
};

class BatchNode : public UnaryNode {
 public:
  BatchNode(std::shared_ptr<const Node> in, int64_t batch_size, bool drop_remainder)
      : UnaryNode(std::move(in)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    return std::make_unique<BatchIterator>(input_->make_iterator(), batch_size_, drop_remainder_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  }
  std::string name() const override { return "Batch"; }

 private:
  int64_t batch_size_;
  bool drop_remainder_;
};

// ---- repeat ----

class RepeatIterator : public IteratorImpl {
 public:
  // Holds the input node (not just an iterator) to start a new pass per repetition.
  RepeatIterator(std::shared_ptr<const Node> input, int64_t count) : node_(std::move(input)), remaining_(count) {}
  std::optional<Element> next() override {
    while (true) {
      if (!cur_) {
        if (remaining_ == 0) return std::nullopt;
        if (remaining_ > 0) --remaining_;
        cur_ = node_->make_iterator();
        produced_in_pass_ = false;
      }
      auto e = cur_->next();
      if (e) {
        produced_in_pass_ = true;
        return e;
      }
      cur_.reset();
      if (!produced_in_pass_) return std::nullopt;  // an empty pass would repeat forever
    }
  }

 private:
  std::shared_ptr<const Node> node_;
  int64_t remaining_;
  std::unique_ptr<IteratorImpl> cur_;
  bool produced_in_pass_ = false;
};

class RepeatNode : public UnaryNode {
 public:
  RepeatNode(std::shared_ptr<const Node> in, int64_t count) : UnaryNode(std::move(in)), count_(count) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    return std::make_unique<RepeatIterator>(input_, count_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (count_ < 0) return n == UNKNOWN_CARDINALITY ? n : INFINITE_CARDINALITY;
    return n < 0 ? n : n * count_;
  }
  std::string name() const override { return "Repeat"; }

 private:
  int64_t count_;
};

// ---- take / skip ----

class TakeIterator : public IteratorImpl {
 public:
  TakeIterator(std::unique_ptr<IteratorImpl> input, int64_t count) : input_(std::move(input)), left_(count) {}
  std::optional<Element> next() override {
    if (left_ == 0 || !input_) return std::nullopt;
    auto e = input_->next();
    if (!e) {
      input_.reset();
      return std::nullopt;
    }
    if (left_ > 0 && --left_ == 0) input_.reset();  // stop upstream threads early
    return e;
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  int64_t left_;
};

class SkipIterator : public IteratorImpl {
 public:
  SkipIterator(std::unique_ptr<IteratorImpl> input, int64_t count) : input_(std::move(input)), skip_(count) {}
  std::optional<Element> next() override {
    while (skip_ != 0) {
      if (!input_->next()) {
        skip_ = 0;
        input_.reset();
        return std::nullopt;
      }
      if (skip_ > 0) --skip_;
    }
    if (!input_) return std::nullopt;
    return input_->next();
  }

 private:
  std::unique_ptr<IteratorImpl> input_;
  int64_t skip_;
};

class TakeSkipNode : public UnaryNode {
 public:
  TakeSkipNode(std::shared_ptr<const Node> in, int64_t count, bool take)
      : UnaryNode(std::move(in)), count_(count), take_(take) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    if (take_) return std::make_unique<TakeIterator>(input_->make_iterator(), count_);
    return std::make_unique<SkipIterator>(input_->make_iterator(), count_);
  }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (take_) {
      if (count_ < 0) return n;
      if (n == INFINITE_CARDINALITY) return count_;
      return n == UNKNOWN_CARDINALITY ? n : std::min(n, count_);
    }
    if (count_ < 0) return n == INFINITE_CARDINALITY ? n : 0;
    return n < 0 ? n : std::max<int64_t>(0, n - count_);
  }
  std::string name() const override { return take_ ? "Take" : "Skip"; }

 private:
  int64_t count_;
  bool take_;
};

// ---- cache ----

struct CacheState {
  std::mutex mu;
  std::shared_ptr<const std::vector<Element>> items;  // set once a pass completed
  bool writing = false;                               // a pass is filling the cache
};

class CacheIterator : public IteratorImpl {
 public:
  CacheIterator(std::shared_ptr<CacheState> state, const Node* input) : state_(std::move(state)) {
    std::lock_guard lock(state_->mu);
    if (state_->items) {
      replay_ = state_->items;
    } else {
      input_ = input->make_iterator();
      if (!state_->writing) writer_ = state_->writing = true;
    }
  }
  ~CacheIterator() override {
    if (!writer_) return;
    std::lock_guard lock(state_->mu);
    state_->writing = false;  // a partial pass caches nothing
  }
  std::optional<Element> next() override {
    if (replay_) {
      if (pos_ >= replay_->size()) return std::nullopt;
      return (*replay_)[pos_++];
    }
    if (!input_) return std::nullopt;
    auto e = input_->next();
    if (!e) {
      input_.reset();
      if (writer_) {
        std::lock_guard lock(state_->mu);
        state_->items = std::make_shared<const std::vector<Element>>(std::move(filled_));
        state_->writing = false;
        writer_ = false;
      }
      return std::nullopt;
    }
    if (writer_) filled_.push_back(*e);
    return e;
  }

 private:
  std::shared_ptr<CacheState> state_;
  std::shared_ptr<const std::vector<Element>> replay_;
  size_t pos_ = 0;
  std::unique_ptr<IteratorImpl> input_;
  bool writer_ = false;
  std::vector<Element> filled_;
};

class CacheNode : public UnaryNode {
 public:
  explicit CacheNode(std::shared_ptr<const Node> in) : UnaryNode(std::move(in)), state_(std::make_shared<CacheState>()) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    return std::make_unique<CacheIterator>(state_, input_.get());
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "Cache"; }

 private:
  std::shared_ptr<CacheState> state_;
};

}  // namespace

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  if (batch_size < 1) fail<ValueError>("Dataset.batch", "batch_size >= 1", std::to_string(batch_size));
  return Dataset(std::make_shared<BatchNode>(node_, batch_size, drop_remainder));
}

Dataset Dataset::repeat(int64_t count) const {
  if (count < -1) fail<ValueError>("Dataset.repeat", "count >= 0 or -1 (forever)", std::to_string(count));
  return Dataset(std::make_shared<RepeatNode>(node_, count));
}

Dataset Dataset::take(int64_t count) const {
  if (count < -1) fail<ValueError>("Dataset.take", "count >= 0 or -1 (all)", std::to_string(count));
  return Dataset(std::make_shared<TakeSkipNode>(node_, count, true));
}

Dataset Dataset::skip(int64_t count) const {
  if (count < -1) fail<ValueError>("Dataset.skip", "count >= 0 or -1 (all)", std::to_string(count));
  return Dataset(std::make_shared<TakeSkipNode>(node_, count, false));
}

Dataset Dataset::cache() const { return Dataset(std::make_shared<CacheNode>(node_)); }

}  // namespace keras::data
