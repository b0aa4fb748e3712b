// Normalization::adapt: the mean and biased variance of data over the axes a Normalization layer
// does not keep, batch by batch, combined as Keras 3 combines them.
#include <algorithm>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "layers/normalization.h"

namespace keras::layers {
namespace {

// Running statistics per kept position, in double.
struct Moments {
  std::vector<double> mean, variance;
  int64_t count = 0;  // values reduced into each position so far

  // Keras 3's update (lack-of-fit sum of squares): exact for the union of the batches.
  void add(const std::vector<double>& batch_mean, const std::vector<double>& batch_variance, int64_t batch_count) {
    if (mean.empty()) {
      mean.assign(batch_mean.size(), 0.0);
      variance.assign(batch_mean.size(), 0.0);
    }
    count += batch_count;
    const double w = static_cast<double>(batch_count) / static_cast<double>(count), keep = 1.0 - w;
    for (size_t i = 0; i < mean.size(); ++i) {
      const double m = mean[i] * keep + batch_mean[i] * w;
      const double dm_old = mean[i] - m, dm_new = batch_mean[i] - m;
      variance[i] = (variance[i] + dm_old * dm_old) * keep + (batch_variance[i] + dm_new * dm_new) * w;
      mean[i] = m;
    }
  }
};

}  // namespace

void NormalizationImpl::adapt(const Tensor& data) {
  bool given = false;
  adapt_batches([&]() -> std::optional<Tensor> {
    if (given) return std::nullopt;
    given = true;
    return data;
  });
}

void NormalizationImpl::adapt_batches(const std::function<std::optional<Tensor>()>& next_batch) {
  const std::string at = where() + " adapt";
  if (options_.mean.given)
    fail<StateError>(at, "a layer that learns its mean and variance", "one given mean and variance in its options",
                     "Leave mean and variance unset to adapt the layer.");
  NoGradGuard no_grad;
  Moments moments;
  bool any = false;
  while (std::optional<Tensor> batch = next_batch()) {
    Shape s = batch->shape();
    try {
      if (!built()) {
        // Built as a symbolic call would build it: batch extent unknown unless the batch axis is kept.
        Shape build_shape = s;
        bool batch_kept = false;
        for (int64_t a : options_.axis) batch_kept = batch_kept || a == 0 || a == -static_cast<int64_t>(s.size());
        if (!build_shape.empty() && !batch_kept) build_shape[0] = -1;
        ensure_built({build_shape});
      }
      validate_input({s});
    } catch (const ShapeError& e) {
      throw ShapeError(at + ": data of shape " + shape_str(s) + " does not fit: " + e.what());
    }
    const std::vector<int> kept = kept_axes(static_cast<int64_t>(s.size()));
    std::vector<int64_t> reduce;
    int64_t batch_count = 1;
    for (int d = 0; d < static_cast<int>(s.size()); ++d)
      if (std::find(kept.begin(), kept.end(), d) == kept.end()) {
        reduce.push_back(d);
        batch_count *= s[d];
      }
    if (batch_count == 0) continue;  // an empty batch adds nothing
    Tensor x = batch->dtype() == DType::float64 ? *batch : ops::cast(*batch, DType::float64);
    std::vector<double> m, v;
    if (reduce.empty()) {  // every axis kept: each value is its own position
      m = x.to_vector<double>();
      v.assign(m.size(), 0.0);
    } else {
      Tensor mk = ops::mean(x, reduce, /*keepdims=*/true);
      m = mk.to_vector<double>();
      v = ops::mean(ops::square(ops::subtract(x, mk)), reduce).to_vector<double>();
    }
    moments.add(m, v, batch_count);
    any = true;
  }
  if (!any) fail<ValueError>(at, "at least one non-empty batch", "none");
  mean_.assign(Tensor::from_vector<double>(moments.mean, mean_.shape()));
  variance_.assign(Tensor::from_vector<double>(moments.variance, variance_.shape()));
}

}  // namespace keras::layers
