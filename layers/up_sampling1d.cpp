#include "layers/up_sampling1d.h"

#include "backend/ops.h"
#include "backend/ops_nn.h"
#include "layers/cropping1d.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

UpSampling1DImpl::UpSampling1DImpl(UpSampling1DOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.size < 1) fail<ValueError>(where(), "size >= 1", std::to_string(options_.size));
}

void UpSampling1DImpl::validate_input(const std::vector<Shape>& shapes) const { require_one_sequence_input(shapes, where()); }

std::vector<Shape> UpSampling1DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape s = shapes[0];
  if (s[1] >= 0) s[1] *= options_.size;
  return {s};
}

TensorList UpSampling1DImpl::call(const TensorList& inputs, const CallContext&) {
  // The steps as the height of a one-pixel-wide image.
  const Tensor& x = inputs[0];
  Tensor image = ops::reshape(x, {x.dim(0), x.dim(1), 1, x.dim(2)});
  Tensor up = ops::upsample_nearest2d(image, {options_.size, 1});
  return {ops::reshape(up, {x.dim(0), x.dim(1) * options_.size, x.dim(2)})};
}

json UpSampling1DImpl::get_config() const {
  json c = base_config();
  c["size"] = options_.size;
  return c;
}

UpSampling1DOptions up_sampling1d_options_from_config(const json& c) {
  UpSampling1DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("size")) {
    if (!c["size"].is_number_integer()) fail<ValueError>("UpSampling1D config 'size'", "an integer", c["size"].dump());
    o.size = c["size"].get<int64_t>();
  }
  return o;
}

KERAS_REGISTER_LAYER(UpSampling1D, [](const json& c) -> LayerPtr {
  return std::make_shared<UpSampling1DImpl>(up_sampling1d_options_from_config(c));
});
KERAS_SIGNATURE(UpSampling1D);

}  // namespace keras::layers
