#include "keras/distribute/gradient_reducer.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace keras::distribution {

namespace {
std::mutex g_stats_mutex;
ReductionStats g_stats;
}  // namespace

ReductionStats reduction_stats() {
  std::lock_guard lock(g_stats_mutex);
  return g_stats;
}

void reset_reduction_stats() {
  std::lock_guard lock(g_stats_mutex);
  g_stats = {};
}

// One bucket: its variables' gradients packed in a buffer, then one count per variable of the
// processes that had a gradient for it (so "no gradient anywhere" stays distinguishable from 0).
struct GradientReducer::Bucket {
  DType dtype = DType::float32;
  std::vector<size_t> variables;
  size_t elements = 0;  // gradient elements, before the counts
  Tensor buffer;        // elements + variables.size()
  size_t pending = 0;   // variables not yet given this step
  std::unique_ptr<collectives::Request> request;
};

GradientReducer::GradientReducer(collectives::Communicator& comm, std::vector<TensorSpec> specs, int64_t bucket_bytes,
                                 int64_t first_bucket_bytes)
    : comm_(comm), specs_(std::move(specs)), bucket_of_(specs_.size()), offset_of_(specs_.size()),
      given_(specs_.size()) {
  // Reverse order: the last variables' gradients are final first.
  for (size_t k = specs_.size(); k-- > 0;) {
    const TensorSpec& s = specs_[k];
    if (!is_floating(s.dtype))
      fail<ValueError>("GradientReducer", "float32 or float64 variables",
                       "variable " + std::to_string(k) + " of dtype " + dtype_name(s.dtype));
    const size_t n = static_cast<size_t>(shape_numel(s.shape));
    const int64_t cap = buckets_.size() == 1 ? first_bucket_bytes : bucket_bytes;
    const bool fits = !buckets_.empty() && buckets_.back()->dtype == s.dtype &&
                      static_cast<int64_t>((buckets_.back()->elements + n) * dtype_size(s.dtype)) <= cap;
    if (!fits) {
      buckets_.push_back(std::make_unique<Bucket>());
      buckets_.back()->dtype = s.dtype;
    }
    Bucket& b = *buckets_.back();
    bucket_of_[k] = buckets_.size() - 1;
    offset_of_[k] = b.elements;
    b.elements += n;
    b.variables.push_back(k);
  }
  for (auto& b : buckets_)
    // Host buffers: the communicator reduces host memory (MPI); gradients of a model on a GPU
    // cross to the host in ready() and back in the results.
    b->buffer = Tensor::empty({static_cast<int64_t>(b->elements + b->variables.size())}, b->dtype, Device::cpu());
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::begin_step(double weight) {
  weight_ = weight;
  next_to_start_ = 0;
  std::fill(given_.begin(), given_.end(), false);
  for (auto& b : buckets_) {
    b->pending = b->variables.size();
    b->request.reset();
    b->buffer.fill_(0.0);
  }
}

namespace {
template <class T>
void scaled_copy(const Tensor& g, T* out, T* count, double weight) {
  const Tensor c = g.to(Device::cpu()).contiguous();
  const T* in = c.data<T>();
  const T w = static_cast<T>(weight);
  const int64_t n = c.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] * w;
  *count = 1;
}
}  // namespace

void GradientReducer::ready(size_t index, const Tensor& gradient) {
  if (index >= specs_.size() || given_[index]) return;
  given_[index] = true;
  Bucket& b = *buckets_[bucket_of_[index]];
  if (gradient.defined()) {
    grad_device_ = gradient.device();
    if (gradient.shape() != specs_[index].shape || gradient.dtype() != specs_[index].dtype)
      fail<ShapeError>("GradientReducer", "gradient " + std::to_string(index) + " of shape " +
                       shape_str(specs_[index].shape) + " " + dtype_name(specs_[index].dtype),
                       shape_str(gradient.shape()) + " " + dtype_name(gradient.dtype()));
    const size_t slot = static_cast<size_t>(std::find(b.variables.begin(), b.variables.end(), index) - b.variables.begin());
    if (b.dtype == DType::float32) {
      float* base = b.buffer.data<float>();
      scaled_copy<float>(gradient, base + offset_of_[index], base + b.elements + slot, weight_);
    } else {
      double* base = b.buffer.data<double>();
      scaled_copy<double>(gradient, base + offset_of_[index], base + b.elements + slot, weight_);
    }
  }
  --b.pending;
  start_ready_buckets();
}

void GradientReducer::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_]->pending == 0) {
    Bucket& b = *buckets_[next_to_start_++];
    b.request = comm_.allreduce_async(b.buffer.raw_data(), static_cast<size_t>(b.buffer.numel()),
                                      collectives::element_type_of(b.dtype), collectives::ReduceOp::sum);
  }
  // Open MPI moves non-blocking collectives on only inside MPI calls: poke the ones in flight.
  for (size_t k = 0; k < next_to_start_; ++k)
    if (buckets_[k]->request) buckets_[k]->request->test();
}

TensorList GradientReducer::finish(const TensorList& local) {
  for (size_t k = 0; k < specs_.size(); ++k)
    if (!given_[k]) ready(k, k < local.size() ? local[k] : Tensor());
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& b : buckets_) b->request->wait();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  wait_seconds_ += waited;
  {
    std::lock_guard lock(g_stats_mutex);
    ++g_stats.steps;
    g_stats.wait_seconds += waited;
    for (const auto& b : buckets_) g_stats.bytes += static_cast<int64_t>(b->buffer.nbytes());
    g_stats.buckets += static_cast<int64_t>(buckets_.size());
  }

  TensorList out(specs_.size());
  for (auto& bp : buckets_) {
    Bucket& b = *bp;
    const size_t esize = dtype_size(b.dtype);
    const char* base = static_cast<const char*>(b.buffer.raw_data());
    for (size_t slot = 0; slot < b.variables.size(); ++slot) {
      const size_t k = b.variables[slot];
      const double count = element_as_double(b.buffer, static_cast<int64_t>(b.elements + slot));
      if (count == 0) continue;
      Tensor g = Tensor::empty(specs_[k].shape, b.dtype, Device::cpu());
      std::memcpy(g.raw_data(), base + offset_of_[k] * esize, g.nbytes());
      out[k] = g.to(grad_device_);
    }
  }
  return out;
}

}  // namespace keras::distribution
