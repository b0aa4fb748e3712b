#include "layers/random_contrast.h"

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/spatial_args.h"

namespace keras::layers {

RandomContrastImpl::RandomContrastImpl(RandomContrastOptions options)
    : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  range_ = factor_range(options_.factor, 0.0, 1.0, where());
}

void RandomContrastImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

TensorList RandomContrastImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training) return {inputs[0]};
  Tensor x = as_image_batch(inputs[0]);
  const int64_t n = x.dim(0);
  std::vector<float> f = uniform_draws(generator(seed_for_generator(options_.seed)), n, 1.0 - range_.first,
                                       1.0 + range_.second);
  Tensor factor = Tensor::from_vector(f, {n, 1, 1, 1}, x.device());
  if (x.dtype() != DType::float32) factor = ops::cast(factor, x.dtype());
  Tensor mean = ops::mean(x, {1, 2}, /*keepdims=*/true);
  Tensor y = ops::add(ops::multiply(ops::subtract(x, mean), factor), mean);
  y = ops::clip(y, options_.value_range[0], options_.value_range[1]);
  return {restore_rank(y, inputs[0].rank())};
}

json RandomContrastImpl::get_config() const {
  json c = base_config();
  write_value_range_keys(c, options_, range_);
  return c;
}

RandomContrastOptions random_contrast_options_from_config(const json& c) {
  return value_range_options_from_config<RandomContrastOptions>(c, "RandomContrast");
}

KERAS_REGISTER_LAYER(RandomContrast, [](const json& c) -> LayerPtr {
  return std::make_shared<RandomContrastImpl>(random_contrast_options_from_config(c));
});
KERAS_SIGNATURE(RandomContrast, .training_default = true);

}  // namespace keras::layers
