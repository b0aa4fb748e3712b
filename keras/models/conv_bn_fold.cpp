#include "keras/models/conv_bn_fold.h"

#include <atomic>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/ops_conv_add.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/depthwise_conv2d.h"
#include "layers/relu.h"

namespace keras {
namespace {
std::atomic<bool> folding_enabled{true};
}
void set_conv_bn_folding(bool enabled) { folding_enabled = enabled; }
bool conv_bn_folding() { return folding_enabled; }
}  // namespace keras

namespace keras::detail {

std::string fused_relu_of(const Layer& layer) {
  if (const auto* r = dynamic_cast<const layers::ReLUImpl*>(&layer)) {
    const auto& o = r->options();
    if (o.negative_slope != 0.0 || o.threshold != 0.0) return "";
    if (!o.max_value) return "relu";
    return *o.max_value == 6.0 ? "relu6" : "";
  }
  if (const auto* a = dynamic_cast<const layers::ActivationImpl*>(&layer)) {
    const std::string& act = a->options().activation;
    return act == "relu" || act == "relu6" ? act : "";
  }
  return "";
}

namespace {

// The kernel and bias of a Conv2D or DepthwiseConv2D (match() admits only these).
std::pair<const Variable*, const Variable*> conv_variables(const Layer& conv, bool depthwise) {
  if (depthwise) {
    const auto& d = static_cast<const layers::DepthwiseConv2DImpl&>(conv);
    return {&d.kernel(), &d.bias()};
  }
  const auto& c = static_cast<const layers::Conv2DImpl&>(conv);
  return {&c.kernel(), &c.bias()};
}

}  // namespace

std::optional<ConvBnFold> ConvBnFold::match(const LayerPtr& conv, const LayerPtr& bn, const LayerPtr& relu) {
  if (!dynamic_cast<const layers::BatchNormalizationImpl*>(bn.get())) return std::nullopt;
  ConvBnFold fold;
  if (const auto* c = dynamic_cast<const layers::Conv2DImpl*>(conv.get())) {
    if (c->options().data_format != "channels_last" || c->options().activation != "linear") return std::nullopt;
  } else if (const auto* d = dynamic_cast<const layers::DepthwiseConv2DImpl*>(conv.get())) {
    if (d->options().data_format != "channels_last" || d->options().activation != "linear") return std::nullopt;
    fold.depthwise_ = true;
  } else {
    return std::nullopt;
  }
  // Under a mixed policy the fold computes in the convolution's dtype; a chain whose layers
  // compute in different dtypes keeps its layers (their casts between them are the model's).
  if (conv->compute_dtype() != bn->compute_dtype()) return std::nullopt;
  fold.conv_ = conv;
  fold.bn_ = bn;
  if (relu && relu->compute_dtype() == bn->compute_dtype()) {
    const std::string act = fused_relu_of(*relu);
    if (!act.empty()) fold.activation_ = act;
  }
  return fold;
}

ConvBnFold ConvBnFold::with_activation_of(const LayerPtr& relu) const {
  ConvBnFold fold = *this;
  const std::string act = relu && relu->compute_dtype() == bn_->compute_dtype() ? fused_relu_of(*relu) : "";
  fold.activation_ = act.empty() ? "linear" : act;
  return fold;
}

bool ConvBnFold::applies(bool bn_training, const Tensor& x) const {
  if (!conv_bn_folding() || !conv_->built() || !bn_->built() || (bn_training && bn_->trainable())) return false;
  if (!grad_recording()) return true;
  if (x.requires_grad()) return false;
  for (const auto& layer : {conv_, bn_})
    for (const Variable& v : layer->weights())
      if (v.value().requires_grad()) return false;
  return true;
}

ConvBnFold::Key ConvBnFold::current_key() const {
  const auto [kernel, bias] = conv_variables(*conv_, depthwise_);
  const auto& b = static_cast<const layers::BatchNormalizationImpl&>(*bn_);
  Key key;
  for (const Variable* v : {kernel, bias, &b.gamma(), &b.beta(), &b.moving_mean(), &b.moving_variance()}) {
    if (!v->defined()) {
      key.emplace_back(nullptr, 0);
      continue;
    }
    const Tensor t = v->value();
    key.emplace_back(t.impl().storage.get(), t.version());
  }
  return key;
}

std::pair<Tensor, Tensor> ConvBnFold::folded_weights() const {
  std::lock_guard lock(cache_->mutex);
  refresh_locked();
  return {cache_->kernel, cache_->bias};
}

void ConvBnFold::refresh_locked() const {
  const auto [conv_kernel, conv_bias] = conv_variables(*conv_, depthwise_);
  const auto& b = static_cast<const layers::BatchNormalizationImpl&>(*bn_);
  const auto& bo = b.options();
  // The stored (float32) values, never an enclosing mixed policy's casts of them.
  AutocastScope stored_dtypes(std::nullopt);
  Key key = current_key();
  if (key != cache_->key || !cache_->kernel.defined()) {
    NoGradGuard no_grad;
    // Two-byte variables (a plain bfloat16/float16 policy on either layer) fold in float32.
    auto value = [](const Variable& v) {
      const Tensor t = v.value();
      return is_half(t.dtype()) ? t.astype(DType::float32) : t;
    };
    const Tensor variance = value(b.moving_variance());
    Tensor scale = ops::divide(Tensor::full(variance.shape(), 1.0, variance.dtype(), variance.device()),
                               ops::sqrt(ops::add(variance, bo.epsilon)));
    if (bo.scale) scale = ops::multiply(scale, value(b.gamma()));
    // The kernel's last axis is the output channel, so the scale broadcasts over it; a depthwise
    // kernel (kh, kw, C, m) is first the grouped kernel (kh, kw, 1, C * m) that conv2d runs.
    Tensor k = value(*conv_kernel);
    if (depthwise_) k = ops::reshape(k, {k.dim(0), k.dim(1), 1, k.dim(2) * k.dim(3)});
    cache_->kernel = ops::multiply(k, scale);
    Tensor shift = conv_bias->defined() ? ops::subtract(value(*conv_bias), value(b.moving_mean()))
                                        : ops::multiply(value(b.moving_mean()), -1.0);
    cache_->bias = ops::multiply(shift, scale);
    if (bo.center) cache_->bias = ops::add(cache_->bias, value(b.beta()));
    cache_->key = std::move(key);
    cache_->cast_kernel = Tensor(), cache_->cast_bias = Tensor();
  }
}

std::pair<Tensor, Tensor> ConvBnFold::weights_in(DType dtype) const {
  std::lock_guard lock(cache_->mutex);
  refresh_locked();
  if (cache_->kernel.dtype() == dtype || !is_floating(dtype)) return {cache_->kernel, cache_->bias};
  if (!cache_->cast_kernel.defined() || cache_->cast_kernel.dtype() != dtype) {
    cache_->cast_kernel = cache_->kernel.astype(dtype);
    cache_->cast_bias = cache_->bias.astype(dtype);
  }
  return {cache_->cast_kernel, cache_->cast_bias};
}

Tensor ConvBnFold::run(const Tensor& x_in, const Tensor& residual) const {
  // As the Conv2D layer would: inputs and weights in its compute dtype (bfloat16 under
  // mixed_bfloat16), the folded weights rounded once from their float32 values.
  const DType dtype = conv_->compute_dtype();
  const Tensor x = is_floating(x_in.dtype()) && x_in.dtype() != dtype ? ops::cast(x_in, dtype) : x_in;
  const auto [kernel, bias] = weights_in(dtype);
  ops::Conv2DArgs args{.activation = activation_};
  if (depthwise_) {
    const auto& o = static_cast<const layers::DepthwiseConv2DImpl&>(*conv_).options();
    args.strides = o.strides.size2(), args.padding = o.padding, args.dilation_rate = o.dilation_rate.size2();
    args.groups = x.dim(3);
  } else {
    const auto& o = static_cast<const layers::Conv2DImpl&>(*conv_).options();
    args.strides = o.strides.size2(), args.padding = o.padding, args.dilation_rate = o.dilation_rate.size2();
    args.groups = o.groups;
  }
  return residual.defined() ? ops::conv2d_add(x, kernel, bias, residual, args) : ops::conv2d(x, kernel, bias, args);
}

}  // namespace keras::detail
