#include "keras/models/batch_source.h"

#include <algorithm>
#include <numeric>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"

namespace keras {

TensorBatches::TensorBatches(TensorList x, TensorList y, Tensor sample_weight, int64_t batch_size, bool shuffle,
                             uint64_t seed, int64_t steps)
    : x_(std::move(x)), y_(std::move(y)), sw_(std::move(sample_weight)), n_(x_.at(0).dim(0)),
      batch_size_(batch_size), end_(steps >= 1 && steps <= n_ / batch_size ? steps * batch_size : n_),
      shuffle_(shuffle), seed_(seed) {}

int64_t TensorBatches::steps() const { return (end_ + batch_size_ - 1) / batch_size_; }

void TensorBatches::begin_epoch(int epoch) {
  cursor_ = 0;
  if (!shuffle_) return;
  // Epoch e's order depends only on (seed, e), so a resumed run repeats it (BackupAndRestore).
  order_.resize(static_cast<size_t>(n_));
  std::iota(order_.begin(), order_.end(), 0);
  Generator gen(seed_ + static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull);
  uint32_t w[4];
  for (int64_t i = n_ - 1; i > 0; --i) {
    philox4x32(gen.seed(), gen.advance(1), w);
    uint64_t r = (static_cast<uint64_t>(w[0]) << 32) | w[1];
    std::swap(order_[static_cast<size_t>(i)], order_[static_cast<size_t>(r % static_cast<uint64_t>(i + 1))]);
  }
}

std::optional<BatchData> TensorBatches::next() {
  if (cursor_ >= end_) return std::nullopt;
  int64_t lo = cursor_, hi = std::min(end_, lo + batch_size_);
  cursor_ = hi;
  BatchData b;
  NoGradGuard no_grad;
  if (shuffle_) {
    // The indices live with each source tensor, not on the default device (a model on a GPU
    // trains on host data too: fit moves each batch after it is gathered).
    const std::vector<int64_t> rows(order_.begin() + lo, order_.begin() + hi);
    const Shape shape{hi - lo};
    Tensor idx;  // made again only for a source on another device
    auto gather = [&](const Tensor& t) {
      if (!idx.defined() || idx.device() != t.device()) idx = Tensor::from_vector(rows, shape, t.device());
      return ops::take(t, idx, 0);
    };
    for (const auto& t : x_) b.x.push_back(gather(t));
    for (const auto& t : y_) b.y.push_back(gather(t));
    if (sw_.defined()) b.sample_weight = gather(sw_);
  } else {
    for (const auto& t : x_) b.x.push_back(t.slice_batch(lo, hi));
    for (const auto& t : y_) b.y.push_back(t.slice_batch(lo, hi));
    if (sw_.defined()) b.sample_weight = sw_.slice_batch(lo, hi);
  }
  return b;
}

DatasetBatches::DatasetBatches(const data::Dataset& dataset, int64_t steps_per_epoch, const std::string& where,
                               data::StepsOption option)
    : it_(dataset, steps_per_epoch, where, std::move(option)), where_(where) {}

std::optional<BatchData> DatasetBatches::next() {
  auto element = it_.next();
  if (!element) return std::nullopt;
  data::Batch b = data::unpack_batch(*element, where_);
  BatchData out;
  out.x = {b.x};
  if (b.y.defined()) out.y = {b.y};
  out.sample_weight = b.sample_weight;
  return out;
}

}  // namespace keras
