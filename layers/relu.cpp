#include "layers/relu.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

ReLUImpl::ReLUImpl(ReLUOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.max_value && !(*options_.max_value >= 0))
    fail<ValueError>(where(), "max_value >= 0 or unset", std::to_string(*options_.max_value));
  if (!(options_.negative_slope >= 0)) fail<ValueError>(where(), "negative_slope >= 0", std::to_string(options_.negative_slope));
  if (!(options_.threshold >= 0)) fail<ValueError>(where(), "threshold >= 0", std::to_string(options_.threshold));
}

void ReLUImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
}

// The common forms map to one fused op; the general form follows keras.activations.relu.
TensorList ReLUImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  const double slope = options_.negative_slope, thr = options_.threshold;
  const auto& cap = options_.max_value;
  if (thr == 0 && slope == 0 && !cap) return {ops::relu(x)};
  if (thr == 0 && slope == 0 && *cap == 6) return {ops::relu6(x)};
  if (thr == 0 && !cap) return {ops::leaky_relu(x, slope)};
  Tensor y = thr != 0 ? ops::multiply(x, ops::cast(ops::greater(x, Tensor::scalar(thr, x.dtype(), x.device())), x.dtype()))
                      : ops::relu(x);
  if (cap) y = ops::clip(y, 0.0, *cap);
  if (slope != 0) y = ops::subtract(y, ops::multiply(ops::relu(ops::add(ops::negative(x), thr)), slope));
  return {y};
}

json ReLUImpl::get_config() const {
  json c = base_config();
  c["max_value"] = options_.max_value ? json(*options_.max_value) : json(nullptr);
  c["negative_slope"] = options_.negative_slope;
  c["threshold"] = options_.threshold;
  return c;
}

ReLUOptions relu_options_from_config(const json& c) {
  ReLUOptions o;
  config::read_base_keys(c, o);
  if (c.contains("max_value") && c["max_value"].is_number()) o.max_value = c["max_value"].get<double>();
  if (c.contains("negative_slope") && c["negative_slope"].is_number()) o.negative_slope = c["negative_slope"].get<double>();
  if (c.contains("threshold") && c["threshold"].is_number()) o.threshold = c["threshold"].get<double>();
  return o;
}

KERAS_REGISTER_LAYER(ReLU, [](const json& c) -> LayerPtr { return std::make_shared<ReLUImpl>(relu_options_from_config(c)); });
KERAS_SIGNATURE(ReLU, .built_at_init = true);

}  // namespace keras::layers
