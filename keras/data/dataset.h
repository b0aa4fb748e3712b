// Dataset: a tf.data-style input pipeline. A Dataset is a cheap, immutable value (a handle to a
// chain of stages); each transformation returns a new Dataset and leaves the old one usable.
// Elements are tuples of tensors (std::vector<Tensor>), e.g. {x, y} or {x, y, sample_weight}.
//
//   auto ds = keras::data::Dataset::from_tensor_slices({x, y})
//                 .shuffle(1024, /*seed=*/42)
//                 .batch(32)
//                 .prefetch(2);
//   for (const auto& batch : ds.iterator()) train_on(batch[0], batch[1]);
//
// Threads: map(num_parallel_calls > 1) runs on worker threads and prefetch on a background thread;
// both belong to the Iterator and are joined when it is destroyed or when an exception leaves
// next() (the iterator is then finished). An exception thrown by a map function reaches the
// consumer from next(), unchanged. Determinism: output order never depends on thread timing, and
// a seeded shuffle gives the same order for the same seed and epoch.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/tensor.h"

namespace keras::data {

using Element = std::vector<Tensor>;
using MapFn = std::function<Element(const Element&)>;

// Cardinality values beside counts, and the AUTOTUNE argument value (tf.data spellings).
inline constexpr int64_t INFINITE_CARDINALITY = -1;
inline constexpr int64_t UNKNOWN_CARDINALITY = -2;
inline constexpr int64_t AUTOTUNE = -1;

namespace detail {
class IteratorImpl;
class Node;
}  // namespace detail

// One pass over a Dataset. Move-only; owns the pipeline's threads.
class Iterator {
 public:
  Iterator();
  explicit Iterator(std::unique_ptr<detail::IteratorImpl> impl);
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next element, or nullopt at the end. Rethrows what a stage threw (map fn, reader error);
  // the iterator has then joined its threads and returns nullopt from then on.
  std::optional<Element> next();

  // Range-for support: for (const Element& e : ds.iterator()).
  struct Sentinel {};
  class Cursor {
   public:
    explicit Cursor(Iterator* it) : it_(it) { ++*this; }
    const Element& operator*() const { return *cur_; }
    Cursor& operator++() { cur_ = it_->next(); return *this; }
    bool operator==(Sentinel) const { return !cur_.has_value(); }
   private:
    Iterator* it_;
    std::optional<Element> cur_;
  };
  Cursor begin() { return Cursor(this); }
  Sentinel end() { return {}; }

 private:
  std::unique_ptr<detail::IteratorImpl> impl_;
};

class Dataset {
 public:
  // ---- sources ----
  // One element: the given tensors as they are.
  static Dataset from_tensors(const Element& tensors);
  // Element i = (t[i] for t in tensors). Throws ValueError for no tensors, a scalar, or
  // components whose first extents differ.
  static Dataset from_tensor_slices(const Element& tensors);
  // int64 scalars start, start + step, ... < stop (> stop for a negative step); ValueError for step 0.
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  static Dataset range(int64_t stop) { return range(0, stop, 1); }

  // ---- transformations (each returns a new Dataset) ----
  // Buffered shuffle as tf.data: a buffer of `buffer_size` elements, each output drawn uniformly
  // from it (buffer_size >= the dataset size gives a uniform permutation). Without a seed one is
  // drawn from the global generator now (so keras::set_random_seed makes it reproducible). With
  // reshuffle_each_iteration every new iterator (epoch) gets another order derived from
  // (seed, epoch); without it every epoch repeats the first order. ValueError for buffer_size < 1.
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  // Stacks `batch_size` consecutive elements along a new first axis; the last, smaller batch is
  // dropped when drop_remainder. Throws (at iteration) ShapeError naming the element and both
  // shapes when elements of a batch differ in shape, TypeError when they differ in dtype.
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  // The dataset `count` times (-1: forever). A repetition that yields nothing ends the repeat.
  Dataset repeat(int64_t count = -1) const;
  // fn applied to every element. num_parallel_calls > 1 (or AUTOTUNE: one per core) runs fn on
  // that many worker threads; the output order is the input order either way. fn runs with
  // gradient recording off and must be safe to call concurrently when parallel.
  Dataset map(MapFn fn, int64_t num_parallel_calls = 1) const;
  // Keeps at most `buffer_size` elements (AUTOTUNE: 2) ready, produced on a background thread.
  // Right after batch() over rows of in-memory tensors the batches ahead are picked on the
  // caller's thread and copied by an idle-priority thread instead (keras/data/dataset_copy.h).
  Dataset prefetch(int64_t buffer_size = AUTOTUNE) const;
  // The first `count` elements (-1: all).
  Dataset take(int64_t count) const;
  // All but the first `count` elements (-1: none left).
  Dataset skip(int64_t count) const;
  // Every num_shards-th element starting at `index` (tf.data's shard): element i goes to shard
  // i % num_shards, so the shards of one order cover it once between them. Shard before
  // shuffling or batching to split a source between processes. ValueError unless
  // 0 <= index < num_shards.
  Dataset shard(int64_t num_shards, int64_t index) const;
  // Keeps the elements of the first complete pass in memory and replays them afterwards (a pass
  // that stops early caches nothing, as tf.data).
  Dataset cache() const;

  // ---- iteration and inspection ----
  // A fresh pass (a new epoch: shuffles draw their next order).
  Iterator iterator() const;
  // Number of elements, INFINITE_CARDINALITY or UNKNOWN_CARDINALITY.
  int64_t cardinality() const;
  // "TensorSlices -> Shuffle -> Batch", for messages.
  std::string describe() const;

  // For stage implementations.
  explicit Dataset(std::shared_ptr<const detail::Node> node);
  const std::shared_ptr<const detail::Node>& node() const { return node_; }

 private:
  std::shared_ptr<const detail::Node> node_;
};

// Stacks equally shaped tensors along a new first axis. Throws ShapeError / TypeError naming
// `where`, the offending element and both shapes (dtypes); ValueError for an empty list. Elements
// are numbered from `first_index` (a batch's position in its dataset).
Tensor stack(const std::vector<Tensor>& parts, const std::string& where, int64_t first_index = 0);

// ---- for Model::fit / evaluate / predict ----

// Keras's unpack_x_y_sample_weight: (x), (x, y) or (x, y, sample_weight); missing parts are
// undefined tensors. ValueError naming `where` for an empty element or more than 3 components.
struct Batch {
  Tensor x, y, sample_weight;
};
Batch unpack_batch(const Element& element, const std::string& where);

// Walks a dataset of batches epoch by epoch, as Keras's EpochIterator:
//  - steps_per_epoch < 1 (default): each epoch is one full pass over the dataset (a fresh
//    iterator, so shuffles reshuffle); an infinite dataset is a ValueError.
//  - steps_per_epoch = n: each epoch takes n batches from one iterator kept across epochs,
//    starting a new pass when a finite dataset is used up at a pass boundary; when the data ends
//    mid-epoch, next() returns nullopt and ran_out() is true (Keras stops training then).
//  - with StepsOption::fresh_pass (validation, evaluate, predict: Keras 3 starts their iterator
//    anew each time), every epoch is a new pass of at most steps_per_epoch batches; data ending
//    first ends the epoch early with ran_out() true, and the next epoch starts over.
// Holds the pipeline's threads: keep it a local of fit so they are joined on return or throw.
struct StepsOption {
  std::string name = "steps_per_epoch";  // the caller's option, named in the infinite-dataset hint
  bool fresh_pass = false;
};

class EpochIterator {
 public:
  EpochIterator(Dataset dataset, int64_t steps_per_epoch = -1, std::string where = "fit", StepsOption option = {});
  // Batches per epoch, or -1 when unknown.
  int64_t steps() const { return steps_; }
  // Starts the next epoch (call before the first next() of each epoch).
  void begin_epoch();
  // The next batch of the current epoch, nullopt at its end.
  std::optional<Element> next();
  bool ran_out() const { return ran_out_; }

 private:
  Dataset dataset_;
  int64_t steps_per_epoch_;
  int64_t steps_;
  int64_t cardinality_;
  std::string where_;
  bool fresh_pass_;
  std::optional<Iterator> iter_;
  int64_t step_in_epoch_ = 0;
  int64_t seen_in_pass_ = 0;
  bool ran_out_ = false;
};

}  // namespace keras::data
