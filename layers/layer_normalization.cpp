#include "layers/layer_normalization.h"

#include "backend/ops_nn.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

LayerNormalizationImpl::LayerNormalizationImpl(LayerNormalizationOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (!(options_.epsilon > 0)) fail<ValueError>(where(), "epsilon > 0", std::to_string(options_.epsilon));
  if (options_.rms_scaling)
    fail<NotImplementedError>(where(), "rms_scaling false", "true", "RMS scaling is not supported yet.");
  if (!options_.beta_initializer.ptr() || !options_.gamma_initializer.ptr())
    fail<ValueError>(where(), "beta and gamma initializers", "none");
}

void LayerNormalizationImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  if (s.size() < 2) fail<ShapeError>(where(), "an input of rank >= 2 (batch, ..., features)", "shape " + shape_str(s));
  int axis = normalize_axis(options_.axis, static_cast<int64_t>(s.size()), where());
  if (axis != static_cast<int>(s.size()) - 1)
    fail<NotImplementedError>(where(), "axis -1", "axis " + std::to_string(options_.axis) + " for input " + shape_str(s));
  if (built() && s.back() != build_input_shapes()[0].back())
    fail<ShapeError>(where(), "input with last axis " + std::to_string(build_input_shapes()[0].back()), "shape " + shape_str(s));
  if (!built() && s.back() < 1) fail<ShapeError>(where(), "a known last axis", "shape " + shape_str(s));
}

void LayerNormalizationImpl::build(const std::vector<Shape>& shapes) {
  const Shape c{shapes[0].back()};
  if (options_.scale)
    gamma_ = add_weight("gamma", c, options_.gamma_initializer.ptr(), true, options_.gamma_regularizer.ptr(),
                        options_.gamma_constraint.ptr());
  if (options_.center)
    beta_ = add_weight("beta", c, options_.beta_initializer.ptr(), true, options_.beta_regularizer.ptr(),
                       options_.beta_constraint.ptr());
}

TensorList LayerNormalizationImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::layer_norm(inputs[0], options_.scale ? gamma_.value() : Tensor(), options_.center ? beta_.value() : Tensor(),
                          options_.epsilon)};
}

std::vector<Shape> LayerNormalizationImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return shapes;
}

json LayerNormalizationImpl::get_config() const {
  json c = base_config();
  c["axis"] = json::array({options_.axis});
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["rms_scaling"] = options_.rms_scaling;
  c["beta_initializer"] = initializers::serialize(options_.beta_initializer.ptr());
  c["gamma_initializer"] = initializers::serialize(options_.gamma_initializer.ptr());
  c["beta_regularizer"] = regularizers::serialize(options_.beta_regularizer.ptr());
  c["gamma_regularizer"] = regularizers::serialize(options_.gamma_regularizer.ptr());
  c["beta_constraint"] = constraints::serialize(options_.beta_constraint.ptr());
  c["gamma_constraint"] = constraints::serialize(options_.gamma_constraint.ptr());
  return c;
}

LayerNormalizationOptions layer_normalization_options_from_config(const json& c) {
  LayerNormalizationOptions o;
  config::read_base_keys(c, o);
  if (c.contains("axis")) {
    const json& a = c["axis"];
    if (a.is_number_integer()) o.axis = a.get<int64_t>();
    else if (a.is_array() && a.size() == 1 && a[0].is_number_integer()) o.axis = a[0].get<int64_t>();
    else fail<NotImplementedError>("LayerNormalization config 'axis'", "an int or a list of one int", a.dump(),
                                   "Normalizing over several axes is not supported yet.");
  }
  if (c.contains("epsilon") && c["epsilon"].is_number()) o.epsilon = c["epsilon"].get<double>();
  o.center = c.value("center", true);
  o.scale = c.value("scale", true);
  o.rms_scaling = c.value("rms_scaling", false);
  if (c.contains("beta_initializer")) o.beta_initializer = initializers::from_config(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = initializers::from_config(c["gamma_initializer"]);
  if (c.contains("beta_regularizer")) o.beta_regularizer = regularizers::from_config(c["beta_regularizer"]);
  if (c.contains("gamma_regularizer")) o.gamma_regularizer = regularizers::from_config(c["gamma_regularizer"]);
  if (c.contains("beta_constraint")) o.beta_constraint = constraints::from_config(c["beta_constraint"]);
  if (c.contains("gamma_constraint")) o.gamma_constraint = constraints::from_config(c["gamma_constraint"]);
  return o;
}

KERAS_REGISTER_LAYER(LayerNormalization, [](const json& c) -> LayerPtr {
  return std::make_shared<LayerNormalizationImpl>(layer_normalization_options_from_config(c));
});

}  // namespace keras::layers
