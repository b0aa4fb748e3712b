#include "layers/custom_scale_layer.h"

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

CustomScaleLayerImpl::CustomScaleLayerImpl(CustomScaleLayerOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (!options_.scale)
    fail<ValueError>(where(), "a scale", "none", "CustomScaleLayer(scale) has no default in Keras.");
}

void CustomScaleLayerImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 2)
    fail<ShapeError>(where(), "two inputs [x, residual]", std::to_string(shapes.size()) + " inputs");
  broadcast_shapes(shapes[0], shapes[1], where() + " inputs [x, residual]");
}

std::vector<Shape> CustomScaleLayerImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return {broadcast_shapes(shapes[0], shapes[1], where())};
}

TensorList CustomScaleLayerImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::add(inputs[0], ops::multiply(inputs[1], *options_.scale))};
}

json CustomScaleLayerImpl::get_config() const {
  json c = base_config();
  c["scale"] = *options_.scale;
  return c;
}

CustomScaleLayerOptions custom_scale_layer_options_from_config(const json& c) {
  CustomScaleLayerOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("scale") || !c["scale"].is_number())
    fail<ValueError>("CustomScaleLayer config 'scale'", "a number", c.contains("scale") ? c["scale"].dump() : "none");
  o.scale = c["scale"].get<double>();
  return o;
}

KERAS_REGISTER_KERAS_LAYER("keras.src.applications.inception_resnet_v2", "Custom", CustomScaleLayer,
                           [](const json& c) -> LayerPtr {
                             return std::make_shared<CustomScaleLayerImpl>(custom_scale_layer_options_from_config(c));
                           });

}  // namespace keras::layers
