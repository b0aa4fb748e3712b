#include "layers/random_crop.h"

#include <algorithm>

#include "layers/augment_args.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/resizing.h"
#include "layers/spatial_args.h"

namespace keras::layers {

RandomCropImpl::RandomCropImpl(RandomCropOptions options)
    : ImagePreprocessingLayer(config::base_options(options)), options_(std::move(options)) {
  require_channels_last(options_.data_format, where());
  check_target_size(where(), options_.height, options_.width);
  if (!options_.seed) options_.seed = default_seed();
}

void RandomCropImpl::validate_input(const std::vector<Shape>& shapes) const { check_image_input(where(), shapes); }

std::vector<Shape> RandomCropImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return {with_image_size(shapes[0], options_.height, options_.width)};
}

std::vector<DType> RandomCropImpl::compute_output_dtype(const std::vector<DType>& in) {
  return {image_output_dtype(in.at(0))};
}

TensorList RandomCropImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training) return {inputs[0]};
  Tensor x = as_image_batch(inputs[0]);
  const int64_t h = x.dim(1), w = x.dim(2), th = options_.height, tw = options_.width;
  CropBox box;
  if (h > th && w > tw) {
    Generator& gen = generator(seed_for_generator(options_.seed));
    const auto top = static_cast<int64_t>(uniform_draws(gen, 1, 0.0, static_cast<double>(h - th + 1))[0]);
    const auto left = static_cast<int64_t>(uniform_draws(gen, 1, 0.0, static_cast<double>(w - tw + 1))[0]);
    box = {std::min(top, h - th), std::min(left, w - tw), th, tw};  // float rounding may reach the bound
  } else {
    CropBox centred = aspect_ratio_crop_box(h, w, th, tw);
    // Keras slices (height, width) from the centred box's corner; the slice stops at the edge.
    box = {centred.top, centred.left, std::min(th, h - centred.top), std::min(tw, w - centred.left)};
  }
  return {restore_rank(crop_and_resize(x, box, th, tw), inputs[0].rank())};
}

json RandomCropImpl::get_config() const {
  json c = base_config();
  c["data_format"] = options_.data_format;
  c["height"] = options_.height;
  c["width"] = options_.width;
  c["seed"] = seed_to_json(options_.seed);
  return c;
}

RandomCropOptions random_crop_options_from_config(const json& c) {
  RandomCropOptions o;
  config::read_base_keys(c, o);
  o.height = c.value("height", int64_t{0});
  o.width = c.value("width", int64_t{0});
  o.seed = config::optional_int(c, "seed");
  o.data_format = data_format_from_config(c);
  return o;
}

KERAS_REGISTER_LAYER(RandomCrop, [](const json& c) -> LayerPtr {
  return std::make_shared<RandomCropImpl>(random_crop_options_from_config(c));
});
KERAS_SIGNATURE(RandomCrop, .training_default = true, .converts_inputs = false);

}  // namespace keras::layers
