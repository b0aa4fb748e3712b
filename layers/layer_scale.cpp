#include "layers/layer_scale.h"

#include "backend/ops.h"
#include "layers/initializers.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

LayerScaleImpl::LayerScaleImpl(LayerScaleOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.projection_dim <= 0)
    fail<ValueError>(where(), "projection_dim > 0", std::to_string(options_.projection_dim));
}

void LayerScaleImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  if (s.empty() || (s.back() >= 0 && s.back() != options_.projection_dim))
    fail<ShapeError>(where(), "an input whose last axis is projection_dim = " + std::to_string(options_.projection_dim),
                     "shape " + shape_str(s), "Set projection_dim to the number of channels.");
}

void LayerScaleImpl::build(const std::vector<Shape>&) {
  gamma_ = add_weight("variable", {options_.projection_dim}, std::make_shared<initializers::Constant>(options_.init_values));
}

TensorList LayerScaleImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::multiply(inputs[0], gamma_.value())};
}

std::vector<Shape> LayerScaleImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return shapes;
}

json LayerScaleImpl::get_config() const {
  json c = base_config();
  c["init_values"] = options_.init_values;
  c["projection_dim"] = options_.projection_dim;
  return c;
}

LayerScaleOptions layer_scale_options_from_config(const json& c) {
  LayerScaleOptions o;
  config::read_base_keys(c, o);
  const std::string where = "LayerScale config";
  if (!c.contains("init_values") || !c["init_values"].is_number())
    fail<ValueError>(where + " 'init_values'", "a number", c.contains("init_values") ? c["init_values"].dump() : "none");
  if (!c.contains("projection_dim") || !c["projection_dim"].is_number_integer())
    fail<ValueError>(where + " 'projection_dim'", "an integer",
                     c.contains("projection_dim") ? c["projection_dim"].dump() : "none");
  o.init_values = c["init_values"].get<double>();
  o.projection_dim = c["projection_dim"].get<int64_t>();
  return o;
}

KERAS_REGISTER_KERAS_LAYER("keras.src.applications.convnext", "", LayerScale, [](const json& c) -> LayerPtr {
  return std::make_shared<LayerScaleImpl>(layer_scale_options_from_config(c));
});

}  // namespace keras::layers
