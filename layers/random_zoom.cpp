#include "layers/random_zoom.h"

#include "backend/ops_image.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/spatial_args.h"

namespace keras::layers {
namespace {

// Keras's RandomZoom._set_factor: numbers in (-1, 1]; a number v gives (-|v|, |v|).
std::pair<double, double> zoom_range(const FactorArg& f, const std::string& name, const std::string& where) {
  auto in_range = [](double v) { return v > -1.0 && v <= 1.0; };
  if (!in_range(f.first) || !in_range(f.second))
    fail<ValueError>(where, name + " a number (or a pair of numbers) in (-1, 1]", f.str());
  if (f.pair) return {std::min(f.first, f.second), std::max(f.first, f.second)};
  return {-std::abs(f.first), std::abs(f.first)};
}

}  // namespace

RandomZoomImpl::RandomZoomImpl(RandomZoomOptions options) : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  height_range_ = zoom_range(options_.height_factor, "height_factor", where());
  if (options_.width_factor) width_range_ = zoom_range(*options_.width_factor, "width_factor", where());
  check_fill_and_interpolation(where(), options_.fill_mode, options_.interpolation);
}

void RandomZoomImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

TensorList RandomZoomImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training) return {inputs[0]};
  Tensor x = as_image_batch(inputs[0]);
  const int64_t n = x.dim(0);
  Generator& gen = generator(seed_for_generator(options_.seed));
  std::vector<float> zh = uniform_draws(gen, n, 1.0 + height_range_.first, 1.0 + height_range_.second);
  std::vector<float> zw = options_.width_factor
                              ? uniform_draws(gen, n, 1.0 + width_range_.first, 1.0 + width_range_.second)
                              : zh;
  const float cx = (static_cast<float>(x.dim(2)) - 1.0f) / 2.0f, cy = (static_cast<float>(x.dim(1)) - 1.0f) / 2.0f;
  std::vector<std::array<float, 8>> rows;
  for (int64_t i = 0; i < n; ++i)
    rows.push_back({zw[i], 0.0f, cx * (1.0f - zw[i]), 0.0f, zh[i], cy * (1.0f - zh[i]), 0.0f, 0.0f});
  Tensor y = ops::affine_transform(x, transform_rows(rows, x.device()), options_.interpolation, options_.fill_mode, options_.fill_value);
  return {restore_rank(y, inputs[0].rank())};
}

json RandomZoomImpl::get_config() const {
  json c = base_config();
  write_fill_keys(c, options_);
  c["height_factor"] = options_.height_factor.to_json();
  c["width_factor"] = options_.width_factor ? options_.width_factor->to_json() : json(nullptr);
  return c;
}

RandomZoomOptions random_zoom_options_from_config(const json& c) {
  RandomZoomOptions o;
  read_fill_keys(c, o);
  o.height_factor = required_factor(c, "height_factor", "RandomZoom");
  if (c.contains("width_factor") && !c["width_factor"].is_null())
    o.width_factor = FactorArg::from_json(c["width_factor"], "RandomZoom config 'width_factor'");
  return o;
}

KERAS_REGISTER_LAYER(RandomZoom, [](const json& c) -> LayerPtr {
  return std::make_shared<RandomZoomImpl>(random_zoom_options_from_config(c));
});
KERAS_SIGNATURE(RandomZoom, .training_default = true);

}  // namespace keras::layers
