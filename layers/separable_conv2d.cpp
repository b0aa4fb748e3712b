#include "layers/separable_conv2d.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

SeparableConv2DImpl::SeparableConv2DImpl(SeparableConv2DOptions o)
    : Layer(config::base_options(o)), options_(std::move(o)) {
  const SeparableConv2DOptions& op = options_;
  if (op.filters < 1) fail<ValueError>(where(), "filters >= 1", std::to_string(op.filters));
  if (op.depth_multiplier < 1) fail<ValueError>(where(), "depth_multiplier >= 1", std::to_string(op.depth_multiplier));
  conv::check_options(where(), 2, op.kernel_size, op.strides, op.dilation_rate, op.padding, op.data_format);
  if (!ops::is_activation(op.activation)) fail<ValueError>(where(), "a known activation", "'" + op.activation + "'");
  if (!op.depthwise_initializer || !op.pointwise_initializer)
    fail<ValueError>(where(), "depthwise and pointwise initializers", "none");
  if (op.use_bias && !op.bias_initializer) fail<ValueError>(where(), "a bias_initializer", "none");
}

void SeparableConv2DImpl::validate_input(const std::vector<Shape>& shapes) const {
  Shape in = conv::channels_last_input(where(), shapes, 2, options_.data_format);
  if (built() && in.back() != depthwise_.shape()[2])
    fail<ShapeError>(where(), "an input with " + std::to_string(depthwise_.shape()[2]) + " channels",
                     "shape " + shape_str(shapes[0]),
                     "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
  conv::output_extents(where(), in, {options_.kernel_size.first, options_.kernel_size.second},
                       {options_.strides.first, options_.strides.second}, {options_.dilation_rate.first, options_.dilation_rate.second},
                       options_.padding);
}

void SeparableConv2DImpl::build(const std::vector<Shape>& shapes) {
  const SeparableConv2DOptions& o = options_;
  int64_t c = conv::channels_last_input(where(), shapes, 2, o.data_format).back();
  depthwise_ = add_weight("depthwise_kernel", {o.kernel_size.first, o.kernel_size.second, c, o.depth_multiplier},
                          o.depthwise_initializer.ptr(), true, o.depthwise_regularizer.ptr(), o.depthwise_constraint.ptr());
  pointwise_ = add_weight("pointwise_kernel", {1, 1, c * o.depth_multiplier, o.filters}, o.pointwise_initializer.ptr(),
                          true, o.pointwise_regularizer.ptr(), o.pointwise_constraint.ptr());
  if (o.use_bias)
    bias_ = add_weight("bias", {o.filters}, o.bias_initializer.ptr(), true, o.bias_regularizer.ptr(), o.bias_constraint.ptr());
}

TensorList SeparableConv2DImpl::call(const TensorList& inputs, const CallContext&) {
  const SeparableConv2DOptions& o = options_;
  Tensor x = conv::to_channels_last(inputs[0], o.data_format);
  Tensor d = ops::depthwise_conv2d(x, depthwise_.value(), Tensor(),
                                   ops::DepthwiseConv2DArgs{.strides = o.strides.size2(), .padding = o.padding,
                                                            .dilation_rate = o.dilation_rate.size2()});
  Tensor y = ops::conv2d(d, pointwise_.value(), o.use_bias ? bias_.value() : Tensor(),
                         ops::Conv2DArgs{.activation = o.activation});
  return {conv::from_channels_last(y, o.data_format)};
}

std::vector<Shape> SeparableConv2DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const SeparableConv2DOptions& o = options_;
  Shape in = conv::channels_last_input(where(), shapes, 2, o.data_format);
  auto hw = conv::output_extents(where(), in, {o.kernel_size.first, o.kernel_size.second}, {o.strides.first, o.strides.second},
                                 {o.dilation_rate.first, o.dilation_rate.second}, o.padding);
  return {conv::to_format({in[0], hw[0], hw[1], o.filters}, o.data_format)};
}

json SeparableConv2DImpl::get_config() const {
  const SeparableConv2DOptions& o = options_;
  json c = base_config();
  c["depth_multiplier"] = o.depth_multiplier;
  c["filters"] = o.filters;
  c["kernel_size"] = conv::pair_to_json(o.kernel_size);
  c["strides"] = conv::pair_to_json(o.strides);
  c["padding"] = o.padding;
  c["data_format"] = o.data_format;
  c["dilation_rate"] = conv::pair_to_json(o.dilation_rate);
  c["activation"] = o.activation;
  c["use_bias"] = o.use_bias;
  c["depthwise_initializer"] = initializers::serialize(o.depthwise_initializer.ptr());
  c["pointwise_initializer"] = initializers::serialize(o.pointwise_initializer.ptr());
  c["bias_initializer"] = initializers::serialize(o.bias_initializer.ptr());
  c["depthwise_regularizer"] = regularizers::serialize(o.depthwise_regularizer.ptr());
  c["pointwise_regularizer"] = regularizers::serialize(o.pointwise_regularizer.ptr());
  c["bias_regularizer"] = regularizers::serialize(o.bias_regularizer.ptr());
  c["activity_regularizer"] = regularizers::serialize(o.activity_regularizer.ptr());
  c["depthwise_constraint"] = constraints::serialize(o.depthwise_constraint.ptr());
  c["pointwise_constraint"] = constraints::serialize(o.pointwise_constraint.ptr());
  c["bias_constraint"] = constraints::serialize(o.bias_constraint.ptr());
  return c;
}

SeparableConv2DOptions separable_conv2d_options_from_config(const json& c) {
  const std::string where = "SeparableConv2D config";
  SeparableConv2DOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("filters") || !c["filters"].is_number_integer())
    fail<ValueError>(where, "an integer 'filters'", c.contains("filters") ? c["filters"].dump() : "none");
  o.filters = c["filters"].get<int64_t>();
  if (!c.contains("kernel_size")) fail<ValueError>(where, "a 'kernel_size'", "none");
  o.kernel_size = conv::pair_from_config(c, "kernel_size", PairArg(), where);
  o.strides = conv::pair_from_config(c, "strides", 1, where);
  o.padding = c.value("padding", std::string("valid"));
  if (c.contains("data_format") && c["data_format"].is_string()) o.data_format = c["data_format"];
  o.dilation_rate = conv::pair_from_config(c, "dilation_rate", 1, where);
  o.depth_multiplier = c.value("depth_multiplier", int64_t{1});
  if (c.contains("activation")) o.activation = config::activation_from_config(c["activation"]);
  o.use_bias = c.value("use_bias", true);
  auto init = [&](const char* key, InitializerArg& dst) {
    if (c.contains(key)) dst = initializers::from_config(c[key]);
  };
  auto reg = [&](const char* key, RegularizerArg& dst) {
    if (c.contains(key)) dst = regularizers::from_config(c[key]);
  };
  init("depthwise_initializer", o.depthwise_initializer);
  init("pointwise_initializer", o.pointwise_initializer);
  init("bias_initializer", o.bias_initializer);
  reg("depthwise_regularizer", o.depthwise_regularizer);
  reg("pointwise_regularizer", o.pointwise_regularizer);
  reg("bias_regularizer", o.bias_regularizer);
  reg("activity_regularizer", o.activity_regularizer);
  if (c.contains("depthwise_constraint")) o.depthwise_constraint = constraints::from_config(c["depthwise_constraint"]);
  if (c.contains("pointwise_constraint")) o.pointwise_constraint = constraints::from_config(c["pointwise_constraint"]);
  if (c.contains("bias_constraint")) o.bias_constraint = constraints::from_config(c["bias_constraint"]);
  return o;
}

KERAS_REGISTER_LAYER(SeparableConv2D, [](const json& c) -> LayerPtr {
  return std::make_shared<SeparableConv2DImpl>(separable_conv2d_options_from_config(c));
});

}  // namespace keras::layers
