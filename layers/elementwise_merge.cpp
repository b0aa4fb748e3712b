#include "layers/elementwise_merge.h"

#include <algorithm>

#include "backend/ops.h"
#include "backend/ops_add_relu.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/mask_ops.h"

namespace keras::layers {

namespace {
// Left fold of a binary op over the inputs.
template <class Op>
Tensor fold(const TensorList& xs, Op op) {
  Tensor out = op(xs[0], xs[1]);
  for (size_t i = 2; i < xs.size(); ++i) out = op(out, xs[i]);
  return out;
}

// Mask i as (batch, steps, 1), to broadcast over input i's features; undefined when none.
Tensor feature_mask(const TensorList& masks, size_t i) {
  return i < masks.size() && masks[i].defined() ? ops::expand_dims(masks[i], -1) : Tensor();
}

// Keras's Merge._apply_merge_op_and_or_mask: a left fold of `op` where a masked entry of either
// operand is replaced by the other operand's entry; the running mask is the OR of the masks
// until an input without one is met.
template <class Op>
Tensor fold_with_masks(const TensorList& xs, const TensorList& masks, Op op) {
  Tensor out = xs[0], out_mask = feature_mask(masks, 0);
  for (size_t i = 1; i < xs.size(); ++i) {
    Tensor x = xs[i], mask = feature_mask(masks, i);
    if (mask.defined()) x = ops::where(mask, x, out);
    if (out_mask.defined()) out = ops::where(out_mask, out, x);
    out_mask = mask.defined() && out_mask.defined() ? masks::logical_or(out_mask, mask) : Tensor();
    out = op(out, x);
  }
  return out;
}

template <class Handle>
KerasTensor call_fresh(const std::vector<KerasTensor>& inputs, MergeOptions options) {
  Handle layer(std::move(options));
  return (*layer)(inputs)[0];
}
}  // namespace

TensorList AddImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.options.is_object() || !ctx.options.contains("_fused_activation")) return MergeImpl::call(inputs, ctx);
  if (ctx.options["_fused_activation"] != "relu")
    fail<ValueError>(where() + " call option '_fused_activation'", "\"relu\"", ctx.options["_fused_activation"].dump());
  const bool masked = std::any_of(ctx.masks.begin(), ctx.masks.end(), [](const Tensor& m) { return m.defined(); });
  if (inputs.size() == 2 && !masked && inputs[0].shape() == inputs[1].shape() &&
      inputs[0].dtype() == inputs[1].dtype() && is_floating(inputs[0].dtype()))
    return {ops::add_then_relu(inputs[0], inputs[1])};
  return {ops::relu(MergeImpl::call(inputs, ctx)[0])};
}

Tensor AddImpl::merge_function(const TensorList& xs) const {
  return fold(xs, [](const Tensor& a, const Tensor& b) { return ops::add(a, b); });
}
Tensor SubtractImpl::merge_function(const TensorList& xs) const { return ops::subtract(xs[0], xs[1]); }
Tensor MultiplyImpl::merge_function(const TensorList& xs) const {
  return fold(xs, [](const Tensor& a, const Tensor& b) { return ops::multiply(a, b); });
}
Tensor MultiplyImpl::merge_with_masks(const TensorList& xs, const TensorList& masks) const {
  // Keras's Multiply: masked entries count as 1; with every input masked, the entries no input
  // keeps are 0.
  Tensor out, any_kept;
  bool all_masked = true;
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor x = xs[i], mask = feature_mask(masks, i);
    if (mask.defined()) {
      x = ops::where(mask, x, Tensor::scalar(1, x.dtype(), x.device()));
      any_kept = any_kept.defined() ? masks::logical_or(any_kept, mask) : mask;
    } else {
      all_masked = false;
    }
    out = out.defined() ? ops::multiply(out, x) : x;
  }
  if (!all_masked) return out;
  return ops::where(any_kept, out, Tensor::scalar(0, out.dtype(), out.device()));
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
Tensor MaximumImpl::merge_with_masks(const TensorList& xs, const TensorList& masks) const {
  return fold_with_masks(xs, masks, [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); });
}
Tensor MinimumImpl::merge_with_masks(const TensorList& xs, const TensorList& masks) const {
  return fold_with_masks(xs, masks, [](const Tensor& a, const Tensor& b) { return ops::minimum(a, b); });
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
