#include "layers/unit_normalization.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

UnitNormalizationImpl::UnitNormalizationImpl(UnitNormalizationOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.axis.empty()) fail<ValueError>(where(), "at least one axis", "none");
}

void UnitNormalizationImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const auto rank = static_cast<int64_t>(shapes[0].size());
  for (int64_t a : options_.axis)
    if (a >= rank || a < -rank)
      fail<ShapeError>(where(), "axes within the input's rank " + std::to_string(rank),
                       "axis " + std::to_string(a) + " for shape " + shape_str(shapes[0]));
}

TensorList UnitNormalizationImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  Tensor square_sum = ops::sum(ops::square(x), options_.axis, true);
  // min(rsqrt(s), 1e12) == rsqrt(max(s, 1e-24)), whose gradient stays finite at zero.
  Tensor inv_norm = ops::divide(Tensor::scalar(1.0, x.dtype(), x.device()), ops::sqrt(ops::maximum(square_sum, Tensor::scalar(1e-24, x.dtype(), x.device()))));
  return {ops::multiply(x, inv_norm)};
}

std::vector<Shape> UnitNormalizationImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return shapes;
}

json UnitNormalizationImpl::get_config() const {
  json c = base_config();
  c["axis"] = options_.axis_is_list ? json(options_.axis) : json(options_.axis[0]);
  return c;
}

UnitNormalizationOptions unit_normalization_options_from_config(const json& c) {
  UnitNormalizationOptions o;
  config::read_base_keys(c, o);
  if (c.contains("axis")) {
    const json& a = c["axis"];
    if (a.is_number_integer()) {
      o.axis = {a.get<int64_t>()};
    } else if (a.is_array()) {
      o.axis = config::shape_from_json(a, "UnitNormalization config 'axis'");
      o.axis_is_list = true;
    } else {
      fail<ValueError>("UnitNormalization config 'axis'", "an int or a list of ints", a.dump());
    }
  }
  return o;
}

KERAS_REGISTER_LAYER(UnitNormalization, [](const json& c) -> LayerPtr {
  return std::make_shared<UnitNormalizationImpl>(unit_normalization_options_from_config(c));
});
KERAS_SIGNATURE(UnitNormalization, .built_at_init = true);

}  // namespace keras::layers
