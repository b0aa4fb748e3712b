#include "layers/random_rotation.h"

#include <cmath>
#include <numbers>

#include "backend/ops_image.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/spatial_args.h"

namespace keras::layers {

std::array<float, 8> rotation_transform(double degrees, int64_t h, int64_t w) {
  // Keras: a0 = cos, a1 = -sin, a2 = cx - cx a0 - cy a1; b0 = sin, b1 = cos, b2 = cy - cx b0 - cy b1,
  // with the centre (cx, cy) = (0.5 (w - 1), 0.5 (h - 1)), in float32 as Keras computes it.
  const float angle = static_cast<float>(degrees) * static_cast<float>(std::numbers::pi / 180.0);
  const float c = std::cos(angle), s = std::sin(angle);
  const float cx = 0.5f * static_cast<float>(w - 1), cy = 0.5f * static_cast<float>(h - 1);
  return {c, -s, cx - cx * c - cy * -s, s, c, cy - cx * s - cy * c, 0.0f, 0.0f};
}

RandomRotationImpl::RandomRotationImpl(RandomRotationOptions options)
    : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  range_ = factor_range(options_.factor, -1.0, 1.0, where());
  check_fill_and_interpolation(where(), options_.fill_mode, options_.interpolation);
}

void RandomRotationImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

TensorList RandomRotationImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training) return {inputs[0]};
  Tensor x = as_image_batch(inputs[0]);
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2);
  std::vector<float> angles = uniform_draws(generator(seed_for_generator(options_.seed)), n, range_.first * 360.0,
                                            range_.second * 360.0);
  std::vector<std::array<float, 8>> rows;
  for (float a : angles) rows.push_back(rotation_transform(a, h, w));
  Tensor y = ops::affine_transform(x, transform_rows(rows, x.device()), options_.interpolation, options_.fill_mode, options_.fill_value);
  return {restore_rank(y, inputs[0].rank())};
}

json RandomRotationImpl::get_config() const {
  json c = base_config();
  write_fill_keys(c, options_);
  c["factor"] = json::array({range_.first, range_.second});
  return c;
}

RandomRotationOptions random_rotation_options_from_config(const json& c) {
  RandomRotationOptions o;
  read_fill_keys(c, o);
  o.factor = required_factor(c, "factor", "RandomRotation");
  return o;
}

KERAS_REGISTER_LAYER(RandomRotation, [](const json& c) -> LayerPtr {
  return std::make_shared<RandomRotationImpl>(random_rotation_options_from_config(c));
});
KERAS_SIGNATURE(RandomRotation, .training_default = true);

}  // namespace keras::layers
