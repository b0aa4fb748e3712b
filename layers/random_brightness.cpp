#include "layers/random_brightness.h"

#include <algorithm>

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/spatial_args.h"

namespace keras::layers {

RandomBrightnessImpl::RandomBrightnessImpl(RandomBrightnessOptions options)
    : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  range_ = factor_range(options_.factor, -1.0, 1.0, where());
  std::sort(options_.value_range.begin(), options_.value_range.end());
}

void RandomBrightnessImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

TensorList RandomBrightnessImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training) return {inputs[0]};
  Tensor x = as_image_batch(inputs[0]);
  const int64_t n = x.dim(0);
  const double lo = options_.value_range[0], hi = options_.value_range[1];
  std::vector<float> d = uniform_draws(generator(seed_for_generator(options_.seed)), n, range_.first, range_.second);
  for (float& v : d) v *= static_cast<float>(hi - lo);
  Tensor delta = Tensor::from_vector(d, {n, 1, 1, 1}, x.device());
  if (x.dtype() != DType::float32) delta = ops::cast(delta, x.dtype());
  return {restore_rank(ops::clip(ops::add(x, delta), lo, hi), inputs[0].rank())};
}

json RandomBrightnessImpl::get_config() const {
  json c = base_config();
  write_value_range_keys(c, options_, range_);
  return c;
}

RandomBrightnessOptions random_brightness_options_from_config(const json& c) {
  return value_range_options_from_config<RandomBrightnessOptions>(c, "RandomBrightness");
}

KERAS_REGISTER_LAYER(RandomBrightness, [](const json& c) -> LayerPtr {
  return std::make_shared<RandomBrightnessImpl>(random_brightness_options_from_config(c));
});
KERAS_SIGNATURE(RandomBrightness, .training_default = true);

}  // namespace keras::layers
