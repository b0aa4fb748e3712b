#include "layers/depthwise_conv2d.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

namespace {
// The weights whose arguments the config carries.
using Opts = DepthwiseConv2DOptions;
constexpr std::array<config::WeightArgs<Opts>, 2> kWeights{{
    {"depthwise", &Opts::depthwise_initializer, &Opts::depthwise_regularizer, &Opts::depthwise_constraint},
    {"bias", &Opts::bias_initializer, &Opts::bias_regularizer, &Opts::bias_constraint},
}};
}  // namespace

DepthwiseConv2DImpl::DepthwiseConv2DImpl(DepthwiseConv2DOptions o)
    : Layer(config::base_options(o)), options_(std::move(o)) {
  conv::check_depthwise_options(where(), options_);
  config::check_weight_args(where(), options_, kWeights);
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
  json c = base_config();
  conv::write_depthwise_keys(options_, kWeights, c);
  return c;
}

DepthwiseConv2DOptions depthwise_conv2d_options_from_config(const json& c) {
  const std::string where = "DepthwiseConv2D config";
  DepthwiseConv2DOptions o;
  config::read_base_keys(c, o);
  conv::read_depthwise_keys(c, o, where);
  o.depth_multiplier = c.value("depth_multiplier", int64_t{1});
  conv::read_size(c, "dilation_rate", o.dilation_rate, where);
  config::read_weight_args(c, kWeights, o);
  return o;
}

KERAS_REGISTER_LAYER(DepthwiseConv2D, [](const json& c) -> LayerPtr {
  return std::make_shared<DepthwiseConv2DImpl>(depthwise_conv2d_options_from_config(c));
});

}  // namespace keras::layers
