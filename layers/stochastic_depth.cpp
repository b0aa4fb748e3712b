#include "layers/stochastic_depth.h"

#include <cmath>

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

StochasticDepthImpl::StochasticDepthImpl(StochasticDepthOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (!(options_.drop_path_rate >= 0.0 && options_.drop_path_rate <= 1.0))
    fail<ValueError>(where(), "drop_path_rate in [0, 1]", std::to_string(options_.drop_path_rate));
}

void StochasticDepthImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].empty())
    fail<ShapeError>(where(), "an input with a batch axis (rank >= 1)", "a scalar", "Each sample is dropped whole.");
}

TensorList StochasticDepthImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const Tensor& x = inputs[0];
  if (!ctx.training || options_.drop_path_rate == 0.0) return {x};
  const double keep = 1.0 - options_.drop_path_rate;
  // One draw per sample, broadcast over the other axes: shape (batch, 1, ..., 1).
  Shape mask_shape(static_cast<size_t>(x.rank()), 1);
  mask_shape[0] = x.shape()[0];
  Tensor u = random::uniform(mask_shape, 0.0, 1.0, generator(), DType::float64);
  std::vector<double> mask = u.to_vector<double>();
  for (double& m : mask) m = keep > 0.0 ? std::floor(keep + m) / keep : 0.0;
  Tensor scale = Tensor::from_vector(mask, mask_shape, x.device()).astype(x.dtype());
  return {ops::multiply(x, scale)};
}

json StochasticDepthImpl::get_config() const {
  json c = base_config();
  c["drop_path_rate"] = options_.drop_path_rate;
  return c;
}

StochasticDepthOptions stochastic_depth_options_from_config(const json& c) {
  StochasticDepthOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("drop_path_rate") || !c["drop_path_rate"].is_number())
    fail<ValueError>("StochasticDepth config 'drop_path_rate'", "a number",
                     c.contains("drop_path_rate") ? c["drop_path_rate"].dump() : "none");
  o.drop_path_rate = c["drop_path_rate"].get<double>();
  return o;
}

KERAS_REGISTER_KERAS_LAYER("keras.src.applications.convnext", "", StochasticDepth, [](const json& c) -> LayerPtr {
  return std::make_shared<StochasticDepthImpl>(stochastic_depth_options_from_config(c));
});

}  // namespace keras::layers
