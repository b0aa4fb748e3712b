#include "layers/random_flip.h"

#include "layers/augment_args.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/spatial_args.h"

namespace keras::layers {

Tensor flip_images(const Tensor& x, int axis) {
  const int64_t n = x.dim(axis);
  Tensor reversed = Tensor::arange(static_cast<double>(n - 1), -1.0, -1.0, DType::int64, x.device());
  return ops::take(x, reversed, axis);
}

RandomFlipImpl::RandomFlipImpl(RandomFlipOptions options)
    : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  const std::string& m = options_.mode;
  if (m != "horizontal" && m != "vertical" && m != "horizontal_and_vertical")
    fail<ValueError>(where(), "mode 'horizontal', 'vertical' or 'horizontal_and_vertical'", "'" + m + "'");
}

void RandomFlipImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

TensorList RandomFlipImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training) return {inputs[0]};
  // 1. one draw per image, 2. the flipped batch, 3. each image from one or the other.
  Tensor x = as_image_batch(inputs[0]);
  const int64_t n = x.dim(0);
  std::vector<float> u = uniform_draws(generator(seed_for_generator(options_.seed)), n, 0.0, 1.0);
  std::vector<bool> flips(n);
  for (int64_t i = 0; i < n; ++i) flips[i] = u[i] <= 0.5f;
  Tensor flipped = x;
  if (options_.mode != "vertical") flipped = flip_images(flipped, 2);
  if (options_.mode != "horizontal") flipped = flip_images(flipped, 1);
  Tensor mask = Tensor::from_vector(flips, {n, 1, 1, 1}, x.device());
  return {restore_rank(ops::where(mask, flipped, x), inputs[0].rank())};
}

json RandomFlipImpl::get_config() const {
  json c = base_config();
  c["data_format"] = options_.data_format;
  c["seed"] = seed_to_json(options_.seed);
  c["mode"] = options_.mode;
  return c;
}

RandomFlipOptions random_flip_options_from_config(const json& c) {
  RandomFlipOptions o;
  config::read_base_keys(c, o);
  if (c.contains("mode") && c["mode"].is_string()) o.mode = c["mode"].get<std::string>();
  o.seed = config::optional_int(c, "seed");
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(RandomFlip, [](const json& c) -> LayerPtr {
  return std::make_shared<RandomFlipImpl>(random_flip_options_from_config(c));
});
KERAS_SIGNATURE(RandomFlip, .training_default = true, .converts_inputs = false);

}  // namespace keras::layers
