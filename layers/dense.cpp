#include "layers/dense.h"

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/weight_args.h"

namespace keras::layers {

DenseImpl::DenseImpl(DenseOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.units < 1) fail<ValueError>(where(), "units >= 1", std::to_string(options_.units));
  config::check_weight_args(where(), options_, config::kernel_and_bias<DenseOptions>());
}

void DenseImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1)
    fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  if (s.size() < 2)
    fail<ShapeError>(where(), "an input of rank >= 2 (batch, ..., features)", "shape " + shape_str(s));
  if (built()) {
    int64_t in = build_input_shapes()[0].back();
    if (s.back() != in)
      fail<ShapeError>(where(), "input with last axis " + std::to_string(in), "shape " + shape_str(s),
                       "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
  } else if (s.back() < 1) {
    fail<ShapeError>(where(), "a known last axis", "shape " + shape_str(s),
                     "Dense needs the feature extent to create its kernel.");
  }
}

void DenseImpl::build(const std::vector<Shape>& shapes) {
  int64_t in = shapes[0].back();
  kernel_ = add_weight("kernel", {in, options_.units}, options_.kernel_initializer.ptr(), true,
                       options_.kernel_regularizer.ptr(), options_.kernel_constraint.ptr());
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.units}, options_.bias_initializer.ptr(), true, options_.bias_regularizer.ptr(),
                       options_.bias_constraint.ptr());
}

TensorList DenseImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::dense(inputs[0], kernel_.value(), options_.use_bias ? bias_.value() : Tensor(), options_.activation)};
}

std::vector<Shape> DenseImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape out = shapes[0];
  out.back() = options_.units;
  return {out};
}

json DenseImpl::get_config() const {
  json c = base_config();
  c["units"] = options_.units;
  config::write_weight_args(options_, config::kernel_and_bias<DenseOptions>(), c);
  if (!options_.activity_regularizer) c.erase("activity_regularizer");  // Keras 3 writes it only when set
  c["quantization_config"] = nullptr;  // Keras 3.15: a float layer
  return c;
}

DenseOptions dense_options_from_config(const json& c) {
  DenseOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("units") || !c["units"].is_number_integer())
    fail<ValueError>("Dense config", "an integer 'units'", c.contains("units") ? c["units"].dump() : "none");
  o.units = c["units"].get<int64_t>();
  config::read_weight_args(c, config::kernel_and_bias<DenseOptions>(), o);
  // A quantized or LoRA Dense carries other weights than kernel and bias.
  for (const char* key : {"quantization_config", "lora_rank"})
    if (c.contains(key) && !c[key].is_null())
      fail<NotImplementedError>("Dense '" + o.name + "' config '" + key + "'", "null (a float Dense)", c[key].dump(),
                                "Quantized and LoRA Dense layers are not supported.");
  return o;
}

KERAS_REGISTER_LAYER(Dense, [](const json& c) -> LayerPtr {
  return std::make_shared<DenseImpl>(dense_options_from_config(c));
});

}  // namespace keras::layers
