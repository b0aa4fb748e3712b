#include "keras/models/conv_bn_fold.h"

#include <atomic>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/relu.h"

namespace keras {
namespace {
std::atomic<bool> folding_enabled{true};
}
void set_conv_bn_folding(bool enabled) { folding_enabled = enabled; }
bool conv_bn_folding() { return folding_enabled; }
}  // namespace keras

namespace keras::detail {
namespace {

bool is_plain_relu(const Layer& layer) {
  if (const auto* r = dynamic_cast<const layers::ReLUImpl*>(&layer)) {
    const auto& o = r->options();
    return !o.max_value && o.negative_slope == 0.0 && o.threshold == 0.0;
  }
  if (const auto* a = dynamic_cast<const layers::ActivationImpl*>(&layer)) return a->options().activation == "relu";
  return false;
}

}  // namespace

std::optional<ConvBnFold> ConvBnFold::match(const LayerPtr& conv, const LayerPtr& bn, const LayerPtr& relu) {
  const auto* c = dynamic_cast<const layers::Conv2DImpl*>(conv.get());
  if (!c || !dynamic_cast<const layers::BatchNormalizationImpl*>(bn.get())) return std::nullopt;
  if (c->options().data_format != "channels_last" || c->options().activation != "linear") return std::nullopt;
  ConvBnFold fold;
  fold.conv_ = conv;
  fold.bn_ = bn;
  if (relu && is_plain_relu(*relu)) fold.relu_ = relu;
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
  const auto& c = static_cast<const layers::Conv2DImpl&>(*conv_);
  const auto& b = static_cast<const layers::BatchNormalizationImpl&>(*bn_);
  Key key;
  for (const Variable* v : {&c.kernel(), &c.bias(), &b.gamma(), &b.beta(), &b.moving_mean(), &b.moving_variance()}) {
    if (!v->defined()) {
      key.emplace_back(nullptr, 0);
      continue;
    }
    const Tensor t = v->value();
    key.emplace_back(t.impl().storage.get(), t.version());
  }
  return key;
}

Tensor ConvBnFold::run(const Tensor& x) const {
  const auto& c = static_cast<const layers::Conv2DImpl&>(*conv_);
  const auto& b = static_cast<const layers::BatchNormalizationImpl&>(*bn_);
  const auto& co = c.options();
  const auto& bo = b.options();
  Tensor kernel, bias;
  {
    std::lock_guard lock(cache_->mutex);
    Key key = current_key();
    if (key != cache_->key || !cache_->kernel.defined()) {
      NoGradGuard no_grad;
      const Tensor variance = b.moving_variance().value();
      Tensor scale = ops::divide(Tensor::full(variance.shape(), 1.0, variance.dtype()),
                                 ops::sqrt(ops::add(variance, bo.epsilon)));
      if (bo.scale) scale = ops::multiply(scale, b.gamma().value());
      // The kernel's last axis is the output channel, so the scale broadcasts over it.
      cache_->kernel = ops::multiply(c.kernel().value(), scale);
      Tensor shift = co.use_bias ? ops::subtract(c.bias().value(), b.moving_mean().value())
                                 : ops::multiply(b.moving_mean().value(), -1.0);
      cache_->bias = ops::multiply(shift, scale);
      if (bo.center) cache_->bias = ops::add(cache_->bias, b.beta().value());
      cache_->key = std::move(key);
    }
    kernel = cache_->kernel;
    bias = cache_->bias;
  }
  return ops::conv2d(x, kernel, bias,
                     ops::Conv2DArgs{.strides = co.strides.size2(), .padding = co.padding,
                                     .dilation_rate = co.dilation_rate.size2(), .groups = co.groups,
                                     .activation = relu_ ? "relu" : "linear"});
}

}  // namespace keras::detail
