#include "layers/elementwise_merge.h"

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

namespace {
// Left fold of a binary op over the inputs.
template <class Op>
Tensor fold(const TensorList& xs, Op op) {
  Tensor out = op(xs[0], xs[1]);
  for (size_t i = 2; i < xs.size(); ++i) out = op(out, xs[i]);
  return out;
}

template <class Handle>
KerasTensor call_fresh(const std::vector<KerasTensor>& inputs, MergeOptions options) {
  Handle layer(std::move(options));
  return (*layer)(inputs)[0];
}
}  // namespace

Tensor AddImpl::merge_function(const TensorList& xs) const {
  return fold(xs, [](const Tensor& a, const Tensor& b) { return ops::add(a, b); });
}
Tensor SubtractImpl::merge_function(const TensorList& xs) const { return ops::subtract(xs[0], xs[1]); }
Tensor MultiplyImpl::merge_function(const TensorList& xs) const {
  return fold(xs, [](const Tensor& a, const Tensor& b) { return ops::multiply(a, b); });
}
Tensor AverageImpl::merge_function(const TensorList& xs) const {
  Tensor sum = fold(xs, [](const Tensor& a, const Tensor& b) { return ops::add(a, b); });
  return ops::multiply(sum, 1.0 / static_cast<double>(xs.size()));
}
Tensor MaximumImpl::merge_function(const TensorList& xs) const {
  return fold(xs, [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); });
}
Tensor MinimumImpl::merge_function(const TensorList& xs) const {
  return fold(xs, [](const Tensor& a, const Tensor& b) { return ops::minimum(a, b); });
}

KerasTensor add(const std::vector<KerasTensor>& in, MergeOptions o) { return call_fresh<Add>(in, std::move(o)); }
KerasTensor subtract(const std::vector<KerasTensor>& in, MergeOptions o) { return call_fresh<Subtract>(in, std::move(o)); }
KerasTensor multiply(const std::vector<KerasTensor>& in, MergeOptions o) { return call_fresh<Multiply>(in, std::move(o)); }
KerasTensor average(const std::vector<KerasTensor>& in, MergeOptions o) { return call_fresh<Average>(in, std::move(o)); }
KerasTensor maximum(const std::vector<KerasTensor>& in, MergeOptions o) { return call_fresh<Maximum>(in, std::move(o)); }
KerasTensor minimum(const std::vector<KerasTensor>& in, MergeOptions o) { return call_fresh<Minimum>(in, std::move(o)); }

MergeOptions merge_options_from_config(const json& c) {
  MergeOptions o;
  config::read_base_keys(c, o);
  return o;
}

#define KERAS_REGISTER_MERGE(Name)                                                   \
  KERAS_REGISTER_LAYER(Name, [](const json& c) -> LayerPtr {                         \
    return std::make_shared<Name##Impl>(merge_options_from_config(c));               \
  })
KERAS_REGISTER_MERGE(Add);
KERAS_REGISTER_MERGE(Subtract);
KERAS_REGISTER_MERGE(Multiply);
KERAS_REGISTER_MERGE(Average);
KERAS_REGISTER_MERGE(Maximum);
KERAS_REGISTER_MERGE(Minimum);
#undef KERAS_REGISTER_MERGE

}  // namespace keras::layers
