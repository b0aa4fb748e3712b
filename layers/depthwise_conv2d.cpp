#include "layers/depthwise_conv2d.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

DepthwiseConv2DImpl::DepthwiseConv2DImpl(DepthwiseConv2DOptions o)
    : Layer(config::base_options(o)), options_(std::move(o)) {
  const DepthwiseConv2DOptions& op = options_;
  if (op.depth_multiplier < 1) fail<ValueError>(where(), "depth_multiplier >= 1", std::to_string(op.depth_multiplier));
  conv::check_options(where(), 2, op.kernel_size, op.strides, op.dilation_rate, op.padding, op.data_format);
  if (!ops::is_activation(op.activation)) fail<ValueError>(where(), "a known activation", "'" + op.activation + "'");
  if (!op.depthwise_initializer) fail<ValueError>(where(), "a depthwise_initializer", "none");
  if (op.use_bias && !op.bias_initializer) fail<ValueError>(where(), "a bias_initializer", "none");
}

void DepthwiseConv2DImpl::validate_input(const std::vector<Shape>& shapes) const {
  Shape in = conv::channels_last_input(where(), shapes, 2, options_.data_format);
  if (built() && in.back() != kernel_.shape()[2])
    fail<ShapeError>(where(), "an input with " + std::to_string(kernel_.shape()[2]) + " channels",
                     "shape " + shape_str(shapes[0]),
                     "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
  conv::output_extents(where(), in, {options_.kernel_size.first, options_.kernel_size.second},
                       {options_.strides.first, options_.strides.second}, {options_.dilation_rate.first, options_.dilation_rate.second},
                       options_.padding);
}

void DepthwiseConv2DImpl::build(const std::vector<Shape>& shapes) {
  int64_t c = conv::channels_last_input(where(), shapes, 2, options_.data_format).back();
  kernel_ = add_weight("kernel", {options_.kernel_size.first, options_.kernel_size.second, c, options_.depth_multiplier},
                       options_.depthwise_initializer.ptr(), true, options_.depthwise_regularizer.ptr(),
                       options_.depthwise_constraint.ptr());
  if (options_.use_bias)
    bias_ = add_weight("bias", {c * options_.depth_multiplier}, options_.bias_initializer.ptr(), true,
                       options_.bias_regularizer.ptr(), options_.bias_constraint.ptr());
}

TensorList DepthwiseConv2DImpl::call(const TensorList& inputs, const CallContext&) {
  const DepthwiseConv2DOptions& o = options_;
  Tensor x = conv::to_channels_last(inputs[0], o.data_format);
  Tensor y = ops::depthwise_conv2d(x, kernel_.value(), o.use_bias ? bias_.value() : Tensor(),
                                   ops::DepthwiseConv2DArgs{.strides = o.strides.size2(), .padding = o.padding,
                                                            .dilation_rate = o.dilation_rate.size2(),
                                                            .activation = o.activation});
  return {conv::from_channels_last(y, o.data_format)};
}

std::vector<Shape> DepthwiseConv2DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const DepthwiseConv2DOptions& o = options_;
  Shape in = conv::channels_last_input(where(), shapes, 2, o.data_format);
  auto hw = conv::output_extents(where(), in, {o.kernel_size.first, o.kernel_size.second}, {o.strides.first, o.strides.second},
                                 {o.dilation_rate.first, o.dilation_rate.second}, o.padding);
  return {conv::to_format({in[0], hw[0], hw[1], in.back() * o.depth_multiplier}, o.data_format)};
}

json DepthwiseConv2DImpl::get_config() const {
  const DepthwiseConv2DOptions& o = options_;
  json c = base_config();
  c["depth_multiplier"] = o.depth_multiplier;
  c["kernel_size"] = conv::pair_to_json(o.kernel_size);
  c["strides"] = conv::pair_to_json(o.strides);
  c["padding"] = o.padding;
  c["data_format"] = o.data_format;
  c["dilation_rate"] = conv::pair_to_json(o.dilation_rate);
  c["activation"] = o.activation;
  c["use_bias"] = o.use_bias;
  c["depthwise_initializer"] = initializers::serialize(o.depthwise_initializer.ptr());
  c["bias_initializer"] = initializers::serialize(o.bias_initializer.ptr());
  c["depthwise_regularizer"] = regularizers::serialize(o.depthwise_regularizer.ptr());
  c["bias_regularizer"] = regularizers::serialize(o.bias_regularizer.ptr());
  c["activity_regularizer"] = regularizers::serialize(o.activity_regularizer.ptr());
  c["depthwise_constraint"] = constraints::serialize(o.depthwise_constraint.ptr());
  c["bias_constraint"] = constraints::serialize(o.bias_constraint.ptr());
  return c;
}

DepthwiseConv2DOptions depthwise_conv2d_options_from_config(const json& c) {
  const std::string where = "DepthwiseConv2D config";
  DepthwiseConv2DOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("kernel_size")) fail<ValueError>(where, "a 'kernel_size'", "none");
  o.kernel_size = conv::pair_from_config(c, "kernel_size", PairArg(), where);
  o.strides = conv::pair_from_config(c, "strides", 1, where);
  o.padding = c.value("padding", std::string("valid"));
  o.depth_multiplier = c.value("depth_multiplier", int64_t{1});
  if (c.contains("data_format") && c["data_format"].is_string()) o.data_format = c["data_format"];
  o.dilation_rate = conv::pair_from_config(c, "dilation_rate", 1, where);
  if (c.contains("activation")) o.activation = config::activation_from_config(c["activation"]);
  o.use_bias = c.value("use_bias", true);
  if (c.contains("depthwise_initializer")) o.depthwise_initializer = initializers::from_config(c["depthwise_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = initializers::from_config(c["bias_initializer"]);
  if (c.contains("depthwise_regularizer")) o.depthwise_regularizer = regularizers::from_config(c["depthwise_regularizer"]);
  if (c.contains("bias_regularizer")) o.bias_regularizer = regularizers::from_config(c["bias_regularizer"]);
  if (c.contains("activity_regularizer")) o.activity_regularizer = regularizers::from_config(c["activity_regularizer"]);
  if (c.contains("depthwise_constraint")) o.depthwise_constraint = constraints::from_config(c["depthwise_constraint"]);
  if (c.contains("bias_constraint")) o.bias_constraint = constraints::from_config(c["bias_constraint"]);
  return o;
}

KERAS_REGISTER_LAYER(DepthwiseConv2D, [](const json& c) -> LayerPtr {
  return std::make_shared<DepthwiseConv2DImpl>(depthwise_conv2d_options_from_config(c));
});

}  // namespace keras::layers
