// Dataset.shard: every num_shards-th element, starting at index.
#include "keras/data/dataset.h"
#include "keras/data/dataset_stage.h"

namespace keras::data {
namespace {

using detail::IteratorImpl;
using detail::Node;

class ShardIterator : public IteratorImpl {
 public:
  ShardIterator(std::unique_ptr<IteratorImpl> input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  std::optional<Element> next() override {
    if (!input_) return std::nullopt;
    // Skip to this shard's next element: `index_` before the first, num_shards - 1 after.
    for (int64_t skip = started_ ? num_shards_ - 1 : index_; skip > 0; --skip)
      if (!input_->next()) return finish();
    started_ = true;
    auto e = input_->next();
    return e ? e : finish();
  }

 private:
  std::optional<Element> finish() {
    input_.reset();
    return std::nullopt;
  }
  std::unique_ptr<IteratorImpl> input_;
  int64_t num_shards_, index_;
  bool started_ = false;
};

class ShardNode : public detail::UnaryNode {
 public:
  ShardNode(std::shared_ptr<const Node> in, int64_t num_shards, int64_t index)
      : UnaryNode(std::move(in)), num_shards_(num_shards), index_(index) {}
  std::unique_ptr<IteratorImpl> make_iterator() const override {
    return std::make_unique<ShardIterator>(input_->make_iterator(), num_shards_, index_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;  // infinite or unknown
    return n > index_ ? (n - index_ + num_shards_ - 1) / num_shards_ : 0;
  }
  std::string name() const override { return "Shard"; }

 private:
  int64_t num_shards_, index_;
};

}  // namespace

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  if (num_shards < 1 || index < 0 || index >= num_shards)
    fail<ValueError>("Dataset.shard", "num_shards >= 1 and 0 <= index < num_shards",
                     "num_shards " + std::to_string(num_shards) + ", index " + std::to_string(index));
  return Dataset(std::make_shared<ShardNode>(node_, num_shards, index));
}

}  // namespace keras::data
