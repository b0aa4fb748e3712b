#include "layers/masking.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/mask_ops.h"

namespace keras::layers {

MaskingImpl::MaskingImpl(MaskingOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {}

void MaskingImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() < 2)
    fail<ShapeError>(where(), "an input of rank >= 2 (batch, steps, ..., features)", "shape " + shape_str(shapes[0]));
}

TensorList MaskingImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  Tensor keep = masks::any_not_equal(x, options_.mask_value, /*keepdims=*/true);
  Tensor out = ops::where(keep, x, Tensor::scalar(0, x.dtype(), x.device()));
  // Keras attaches the mask in call(), so it replaces any mask the input carried.
  out.set_keras_mask(ops::squeeze(keep, -1));
  return {out};
}

TensorList MaskingImpl::compute_mask(const TensorList& inputs, const TensorList&) const {
  return {masks::any_not_equal(inputs[0], options_.mask_value)};
}

json MaskingImpl::get_config() const {
  json c = base_config();
  c["mask_value"] = options_.mask_value;
  return c;
}

MaskingOptions masking_options_from_config(const json& c) {
  MaskingOptions o;
  config::read_base_keys(c, o);
  if (c.contains("mask_value")) {
    if (!c["mask_value"].is_number())
      fail<ValueError>("Masking config 'mask_value'", "a number", c["mask_value"].dump());
    o.mask_value = c["mask_value"].get<double>();
  }
  return o;
}

KERAS_REGISTER_LAYER(Masking, [](const json& c) -> LayerPtr { return std::make_shared<MaskingImpl>(masking_options_from_config(c)); });
KERAS_SIGNATURE(Masking, .built_at_init = true);

}  // namespace keras::layers
