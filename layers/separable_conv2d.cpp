#include "layers/separable_conv2d.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

namespace {
// The weights whose arguments the config carries.
using Opts = SeparableConv2DOptions;
constexpr std::array<config::WeightArgs<Opts>, 3> kWeights{{
    {"depthwise", &Opts::depthwise_initializer, &Opts::depthwise_regularizer, &Opts::depthwise_constraint},
    {"pointwise", &Opts::pointwise_initializer, &Opts::pointwise_regularizer, &Opts::pointwise_constraint},
    {"bias", &Opts::bias_initializer, &Opts::bias_regularizer, &Opts::bias_constraint},
}};
}  // namespace

SeparableConv2DImpl::SeparableConv2DImpl(SeparableConv2DOptions o)
    : Layer(config::base_options(o)), options_(std::move(o)) {
  const SeparableConv2DOptions& op = options_;
  conv::check_filters(where(), op.filters);
  conv::check_depthwise_options(where(), op);
  // Not config::check_weight_args: this layer has always named both kernels in one error.
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
  json c = base_config();
  c["filters"] = options_.filters;
  conv::write_depthwise_keys(options_, kWeights, c);
  return c;
}

SeparableConv2DOptions separable_conv2d_options_from_config(const json& c) {
  const std::string where = "SeparableConv2D config";
  SeparableConv2DOptions o;
  config::read_base_keys(c, o);
  o.filters = conv::filters_from_config(c, where);
  conv::read_depthwise_keys(c, o, where);
  conv::read_size(c, "dilation_rate", o.dilation_rate, where);
  o.depth_multiplier = c.value("depth_multiplier", int64_t{1});
  config::read_weight_args(c, kWeights, o);
  return o;
}

KERAS_REGISTER_LAYER(SeparableConv2D, [](const json& c) -> LayerPtr {
  return std::make_shared<SeparableConv2DImpl>(separable_conv2d_options_from_config(c));
});

}  // namespace keras::layers
