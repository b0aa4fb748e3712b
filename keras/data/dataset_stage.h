// The extension interface of Dataset stages (internal to keras/dataset*.cpp).
//
// A Node is an immutable description of one stage; make_iterator starts a pass over it (and,
// recursively, over its input). An IteratorImpl is used by one thread at a time; a stage that owns
// threads must stop and join them in its destructor, before its input iterator is destroyed.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keras/data/dataset.h"

namespace keras::data::detail {

class Node;

// A produced element, or the rows of a random-access source still to be copied into one, so that
// a prefetch stage can have that copy done ahead by an idle-priority thread (dataset_copy.h).
struct Pending {
  std::optional<Element> element;
  std::shared_ptr<const Node> source;  // with rows, when element is empty
  std::vector<int64_t> rows;
  Element resolve() &&;
};

class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;
  // The next element, nullopt at the end; may throw (the caller then discards the iterator).
  virtual std::optional<Element> next() = 0;
  // Iterators that yield rows of a random-access source may instead hand out the index of their
  // next row (interchangeable with next(): both advance); batch then gathers rows straight into
  // the batch tensors, with no per-row tensors.
  virtual const Node* index_source() const { return nullptr; }
  virtual std::optional<int64_t> next_index() { return std::nullopt; }
  // The source whose rows every next_pending() hands out as a row list (batch over an index
  // source), or null; next_pending() is interchangeable with next() (both advance) and leaves
  // the copy to the caller (see Pending).
  virtual const Node* row_list_source() const { return nullptr; }
  virtual std::optional<Pending> next_pending() { return std::nullopt; }
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  virtual ~Node() = default;
  virtual std::unique_ptr<IteratorImpl> make_iterator() const = 0;
  virtual int64_t cardinality() const = 0;
  virtual std::string name() const = 0;
  // The input stage, or null for a source.
  virtual const Node* input() const { return nullptr; }
  // Random-access sources (in-memory slices, range) hand out element i directly, so that a
  // shuffle can buffer row indices instead of elements: same order, no per-element buffer.
  virtual bool random_access() const { return false; }
  virtual Element at(int64_t i) const { return {}; }
  // Rows `indices` stacked into one batch element (default: stack of at(i)).
  virtual Element gather(const std::vector<int64_t>& indices) const;
  // Sources that fill a batch in parts, from several threads at once (gathers_in_parts):
  // gather_allocate returns the uninitialized batch tensors for `count` rows, gather_rows copies
  // rows [begin, end) of `indices` into them.
  virtual bool gathers_in_parts() const { return false; }
  virtual Element gather_allocate(int64_t count) const { return {}; }
  virtual void gather_rows(const std::vector<int64_t>& indices, int64_t begin, int64_t end,
                           Element& batch) const {}
};

// Marks the calling thread as a pipeline worker (prefetch producer, map worker) for its lifetime.
// Copies on such a thread stay on it: an OpenMP region opened there would start a second team
// that competes with the training step's team for the same cores.
class PipelineThreadScope {
 public:
  PipelineThreadScope();
  ~PipelineThreadScope();
  PipelineThreadScope(const PipelineThreadScope&) = delete;
  PipelineThreadScope& operator=(const PipelineThreadScope&) = delete;
};
bool on_pipeline_thread();

// Convenience base for stages with one input.
class UnaryNode : public Node {
 public:
  explicit UnaryNode(std::shared_ptr<const Node> input) : input_(std::move(input)) {}
  const Node* input() const override { return input_.get(); }

 protected:
  std::shared_ptr<const Node> input_;
};

}  // namespace keras::data::detail
