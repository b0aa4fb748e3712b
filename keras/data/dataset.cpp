// Dataset handle, in-memory sources, stacking, and the EpochIterator used by Model::fit.
#include "keras/data/dataset.h"

#include <cstring>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "keras/data/dataset_copy.h"
#include "keras/data/dataset_stage.h"

namespace keras::data {

// ---- Iterator ----

Iterator::Iterator() = default;
Iterator::Iterator(std::unique_ptr<detail::IteratorImpl> impl) : impl_(std::move(impl)) {}
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;
Iterator::~Iterator() = default;

std::optional<Element> Iterator::next() {
  if (!impl_) return std::nullopt;
  try {
    auto e = impl_->next();
    if (!e) impl_.reset();  // the pass is over: release buffers and join threads now
    return e;
  } catch (...) {
    // Stop every stage's threads before the exception reaches the caller.
    impl_.reset();
    throw;
  }
}

// ---- sources ----

namespace detail {
namespace {
thread_local int pipeline_thread_depth = 0;
}
PipelineThreadScope::PipelineThreadScope() { ++pipeline_thread_depth; }
PipelineThreadScope::~PipelineThreadScope() { --pipeline_thread_depth; }
bool on_pipeline_thread() { return pipeline_thread_depth > 0; }
Element Pending::resolve() && {
  if (element) return std::move(*element);
  if (!source->gathers_in_parts()) return source->gather(rows);
  return copy_batch(*source, rows);
}
}  // namespace detail

namespace {

class ListIterator : public detail::IteratorImpl {
 public:
  ListIterator(std::shared_ptr<const std::vector<Element>> items) : items_(std::move(items)) {}
  std::optional<Element> next() override {
    if (pos_ >= items_->size()) return std::nullopt;
    return (*items_)[pos_++];
  }

 private:
  std::shared_ptr<const std::vector<Element>> items_;
  size_t pos_ = 0;
};

class TensorsNode : public detail::Node {
 public:
  explicit TensorsNode(Element e) : items_(std::make_shared<std::vector<Element>>(1, std::move(e))) {}
  std::unique_ptr<detail::IteratorImpl> make_iterator() const override {
    return std::make_unique<ListIterator>(items_);
  }
  int64_t cardinality() const override { return 1; }
  std::string name() const override { return "Tensors"; }

 private:
  std::shared_ptr<const std::vector<Element>> items_;
};

// Row i of every component, as views sharing the source storage. The views are built from a
// per-component template (one allocation per row and component): this is the per-sample cost
// of every in-memory pipeline.
struct RowSource {
  Element tensors;
  std::vector<TensorImpl> templates;
  std::vector<int64_t> row_strides;

  explicit RowSource(Element ts) : tensors(std::move(ts)) {
    for (const auto& t : tensors) {
      TensorImpl row = t.impl();
      row.shape.erase(row.shape.begin());
      row.strides.erase(row.strides.begin());
      row.grad_fn = nullptr;
      row.requires_grad = false;
      templates.push_back(std::move(row));
      row_strides.push_back(t.strides()[0]);
    }
  }
  int64_t size() const { return tensors[0].dim(0); }
  // Batch tensors for `count` rows, filled by copy_rows straight from the (contiguous, CPU)
  // sources; several threads may fill disjoint row ranges at once.
  Element allocate(int64_t count) const {
    Element out;
    for (const Tensor& t : tensors) {
      Shape shape = t.shape();
      shape[0] = count;
      out.push_back(Tensor::empty(shape, t.dtype(), Device::cpu()));
    }
    return out;
  }
  void copy_rows(const std::vector<int64_t>& idx, int64_t begin, int64_t end, Element& batch) const {
    for (size_t c = 0; c < tensors.size(); ++c) {
      const size_t row_bytes = static_cast<size_t>(row_strides[c]) * dtype_size(tensors[c].dtype());
      const auto* src = static_cast<const char*>(tensors[c].raw_data());
      auto* dst = static_cast<char*>(batch[c].raw_data());
      detail::copy_rows(dst + static_cast<size_t>(begin) * row_bytes, src, row_bytes, idx.data() + begin, end - begin);
    }
  }
  Element row(int64_t i) const {
    Element e;
    e.reserve(templates.size());
    for (size_t c = 0; c < templates.size(); ++c) {
      auto impl = std::make_shared<TensorImpl>(templates[c]);
      impl->offset += i * row_strides[c];
      e.emplace_back(std::move(impl));
    }
    return e;
  }
};

class SlicesIterator : public detail::IteratorImpl {
 public:
  SlicesIterator(std::shared_ptr<const detail::Node> node, std::shared_ptr<const RowSource> src)
      : node_(std::move(node)), src_(std::move(src)) {}
  std::optional<Element> next() override {
    if (i_ >= src_->size()) return std::nullopt;
    return src_->row(i_++);
  }
  const detail::Node* index_source() const override { return node_.get(); }
  std::optional<int64_t> next_index() override {
    if (i_ >= src_->size()) return std::nullopt;
    return i_++;
  }

 private:
  std::shared_ptr<const detail::Node> node_;
  std::shared_ptr<const RowSource> src_;
  int64_t i_ = 0;
};

class SlicesNode : public detail::Node {
 public:
  explicit SlicesNode(Element ts) : src_(std::make_shared<RowSource>(std::move(ts))) {}
  std::unique_ptr<detail::IteratorImpl> make_iterator() const override {
    return std::make_unique<SlicesIterator>(shared_from_this(), src_);
  }
  int64_t cardinality() const override { return src_->size(); }
  std::string name() const override { return "TensorSlices"; }
  bool random_access() const override { return true; }
  Element at(int64_t i) const override { return src_->row(i); }
  // Views of a non-CPU source go through the generic stack (Node::gather).
  bool gathers_in_parts() const override { return src_->tensors[0].device().kind == DeviceKind::cpu; }
  Element gather_allocate(int64_t count) const override { return src_->allocate(count); }
  void gather_rows(const std::vector<int64_t>& indices, int64_t begin, int64_t end,
                   Element& batch) const override {
    src_->copy_rows(indices, begin, end, batch);
  }

 private:
  std::shared_ptr<const RowSource> src_;
};

class RangeIterator : public detail::IteratorImpl {
 public:
  RangeIterator(int64_t start, int64_t stop, int64_t step) : cur_(start), stop_(stop), step_(step) {}
  std::optional<Element> next() override {
    if (step_ > 0 ? cur_ >= stop_ : cur_ <= stop_) return std::nullopt;
    Tensor t = Tensor::empty({}, DType::int64, Device::cpu());
    *t.data<int64_t>() = cur_;
    cur_ += step_;
    return Element{t};
  }

 private:
  int64_t cur_, stop_, step_;
};

class RangeNode : public detail::Node {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step) : start_(start), stop_(stop), step_(step) {}
  std::unique_ptr<detail::IteratorImpl> make_iterator() const override {
    return std::make_unique<RangeIterator>(start_, stop_, step_);
  }
  int64_t cardinality() const override {
    int64_t span = step_ > 0 ? stop_ - start_ : start_ - stop_;
    int64_t s = step_ > 0 ? step_ : -step_;
    return span <= 0 ? 0 : (span + s - 1) / s;
  }
  std::string name() const override { return "Range"; }
  bool random_access() const override { return true; }
  Element at(int64_t i) const override {
    Tensor t = Tensor::empty({}, DType::int64, Device::cpu());
    *t.data<int64_t>() = start_ + i * step_;
    return Element{t};
  }

 private:
  int64_t start_, stop_, step_;
};

}  // namespace

Dataset::Dataset(std::shared_ptr<const detail::Node> node) : node_(std::move(node)) {}

Dataset Dataset::from_tensors(const Element& tensors) {
  if (tensors.empty()) fail<ValueError>("Dataset.from_tensors", "at least one tensor", "none");
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!tensors[i].defined())
      fail<ValueError>("Dataset.from_tensors", "defined tensors", "an undefined tensor at component " + std::to_string(i));
  return Dataset(std::make_shared<TensorsNode>(tensors));
}

Dataset Dataset::from_tensor_slices(const Element& tensors) {
  const std::string where = "Dataset.from_tensor_slices";
  if (tensors.empty()) fail<ValueError>(where, "at least one tensor", "none");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!t.defined()) fail<ValueError>(where, "defined tensors", "an undefined tensor at component " + std::to_string(i));
    if (t.rank() == 0)
      fail<ValueError>(where, "tensors with a first axis to slice", "a scalar at component " + std::to_string(i));
    if (t.dim(0) != tensors[0].dim(0))
      fail<ValueError>(where, "components with the same first extent",
                       shape_str(tensors[0].shape()) + " (component 0) and " + shape_str(t.shape()) +
                           " (component " + std::to_string(i) + ")");
  }
  Element contiguous;
  for (const auto& t : tensors) contiguous.push_back(t.detach().contiguous());
  return Dataset(std::make_shared<SlicesNode>(std::move(contiguous)));
}

Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) fail<ValueError>("Dataset.range", "a non-zero step", "0");
  return Dataset(std::make_shared<RangeNode>(start, stop, step));
}

Iterator Dataset::iterator() const { return Iterator(node_->make_iterator()); }
int64_t Dataset::cardinality() const { return node_->cardinality(); }

std::string Dataset::describe() const {
  std::vector<std::string> names;
  for (const detail::Node* n = node_.get(); n; n = n->input()) names.push_back(n->name());
  std::string out;
  for (auto it = names.rbegin(); it != names.rend(); ++it) out += (out.empty() ? "" : " -> ") + *it;
  return out;
}

// ---- stacking ----

Element detail::Node::gather(const std::vector<int64_t>& indices) const {
  std::vector<Element> rows;
  for (int64_t i : indices) rows.push_back(at(i));
  Element out;
  std::vector<Tensor> parts(rows.size());
  for (size_t c = 0; c < rows[0].size(); ++c) {
    for (size_t r = 0; r < rows.size(); ++r) parts[r] = rows[r][c];
    out.push_back(stack(parts, name() + ".gather"));
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& parts, const std::string& where, int64_t first_index) {
  if (parts.empty()) fail<ValueError>(where, "at least one tensor to stack", "none");
  const Tensor& first = parts[0];
  const std::string element_0 = "element " + std::to_string(first_index);
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string element_i = "element " + std::to_string(first_index + static_cast<int64_t>(i));
    if (parts[i].shape() != first.shape())
      fail<ShapeError>(where, element_i + " to have the shape of " + element_0 + ", " + shape_str(first.shape()),
                       shape_str(parts[i].shape()),
                       "Elements of one batch must have equal shapes; resize them in a map() first.");
    if (parts[i].dtype() != first.dtype())
      fail<TypeError>(where, element_i + " to have the dtype of " + element_0 + ", " + dtype_name(first.dtype()),
                      dtype_name(parts[i].dtype()));
  }
  Shape out_shape{static_cast<int64_t>(parts.size())};
  out_shape.insert(out_shape.end(), first.shape().begin(), first.shape().end());
  if (first.device().kind != DeviceKind::cpu) {
    NoGradGuard no_grad;
    std::vector<Tensor> rows;
    for (const auto& p : parts) rows.push_back(ops::expand_dims(p, 0));
    return ops::concatenate(rows, 0);
  }
  Tensor out = Tensor::empty(out_shape, first.dtype(), Device::cpu());
  const size_t row_bytes = first.nbytes();
  auto* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < parts.size(); ++i) {
    Tensor c = parts[i].contiguous();
    if (row_bytes) std::memcpy(dst + i * row_bytes, c.raw_data(), row_bytes);
  }
  return out;
}

// ---- fit support ----

Batch unpack_batch(const Element& e, const std::string& where) {
  if (e.empty() || e.size() > 3)
    fail<ValueError>(where, "dataset elements (x), (x, y) or (x, y, sample_weight)",
                     "an element of " + std::to_string(e.size()) + " tensors");
  Batch b;
  b.x = e[0];
  if (e.size() > 1) b.y = e[1];
  if (e.size() > 2) b.sample_weight = e[2];
  return b;
}

EpochIterator::EpochIterator(Dataset dataset, int64_t steps_per_epoch, std::string where, StepsOption option)
    : dataset_(std::move(dataset)),
      steps_per_epoch_(steps_per_epoch > 0 ? steps_per_epoch : -1),
      cardinality_(dataset_.cardinality()),
      where_(std::move(where)),
      fresh_pass_(option.fresh_pass) {
  if (steps_per_epoch_ < 0 && cardinality_ == INFINITE_CARDINALITY)
    fail<ValueError>(where_, "a finite dataset or " + option.name, "an infinite dataset (" + dataset_.describe() + ")",
                     "Pass " + option.name + ", or remove repeat().");
  steps_ = steps_per_epoch_ > 0 ? steps_per_epoch_ : (cardinality_ >= 0 ? cardinality_ : -1);
  // A fresh pass never wraps around, so a known shorter dataset caps the count (the progress bar).
  if (fresh_pass_ && cardinality_ >= 0 && steps_per_epoch_ > cardinality_) steps_ = cardinality_;
}

void EpochIterator::begin_epoch() {
  step_in_epoch_ = 0;
  if (steps_per_epoch_ < 0 || fresh_pass_ || !iter_) {
    iter_.emplace(dataset_.iterator());
    seen_in_pass_ = 0;
    if (fresh_pass_) ran_out_ = false;
  }
}

std::optional<Element> EpochIterator::next() {
  if (!iter_ || ran_out_) return std::nullopt;
  if (steps_per_epoch_ > 0) {
    if (step_in_epoch_ >= steps_per_epoch_) return std::nullopt;
    // A finite dataset used up exactly at a pass boundary starts a new pass (Keras does the same).
    if (!fresh_pass_ && cardinality_ >= 0 && seen_in_pass_ >= cardinality_) {
      iter_.emplace(dataset_.iterator());
      seen_in_pass_ = 0;
    }
  }
  auto e = iter_->next();
  if (!e) {
    if (steps_per_epoch_ > 0) ran_out_ = true;
    return std::nullopt;
  }
  ++step_in_epoch_;
  ++seen_in_pass_;
  return e;
}

}  // namespace keras::data
