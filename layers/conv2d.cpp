#include "layers/conv2d.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

Conv2DImpl::Conv2DImpl(Conv2DOptions o) : Layer(config::base_options(o)), options_(std::move(o)) {
  conv::check_conv_options(where(), options_);
  config::check_weight_args(where(), options_, config::kernel_and_bias<Conv2DOptions>());
}

void Conv2DImpl::validate_input(const std::vector<Shape>& shapes) const {
  Shape in = conv::channels_last_input(where(), shapes, 2, options_.data_format);
  int64_t c = in.back();
  if (built()) {
    int64_t built_c = kernel_.shape()[2] * options_.groups;
    if (c != built_c)
      fail<ShapeError>(where(), "an input with " + std::to_string(built_c) + " channels", "shape " + shape_str(shapes[0]),
                       "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
  } else if (c % options_.groups != 0) {
    fail<ShapeError>(where(), "input channels divisible by groups (" + std::to_string(options_.groups) + ")",
                     "shape " + shape_str(shapes[0]));
  }
  conv::output_extents(where(), in, {options_.kernel_size.first, options_.kernel_size.second},
                       {options_.strides.first, options_.strides.second}, {options_.dilation_rate.first, options_.dilation_rate.second},
                       options_.padding);
}

void Conv2DImpl::build(const std::vector<Shape>& shapes) {
  int64_t c = conv::channels_last_input(where(), shapes, 2, options_.data_format).back();
  kernel_ = add_weight("kernel", {options_.kernel_size.first, options_.kernel_size.second, c / options_.groups, options_.filters},
                       options_.kernel_initializer.ptr(), true, options_.kernel_regularizer.ptr(),
                       options_.kernel_constraint.ptr());
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.filters}, options_.bias_initializer.ptr(), true, options_.bias_regularizer.ptr(),
                       options_.bias_constraint.ptr());
}

TensorList Conv2DImpl::call(const TensorList& inputs, const CallContext&) {
  const Conv2DOptions& o = options_;
  Tensor x = conv::to_channels_last(inputs[0], o.data_format);
  Tensor y = ops::conv2d(x, kernel_.value(), o.use_bias ? bias_.value() : Tensor(),
                         ops::Conv2DArgs{.strides = o.strides.size2(), .padding = o.padding,
                                         .dilation_rate = o.dilation_rate.size2(), .groups = o.groups,
                                         .activation = o.activation});
  return {conv::from_channels_last(y, o.data_format)};
}

std::vector<Shape> Conv2DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape in = conv::channels_last_input(where(), shapes, 2, options_.data_format);
  auto hw = conv::output_extents(where(), in, {options_.kernel_size.first, options_.kernel_size.second},
                                 {options_.strides.first, options_.strides.second},
                                 {options_.dilation_rate.first, options_.dilation_rate.second}, options_.padding);
  return {conv::to_format({in[0], hw[0], hw[1], options_.filters}, options_.data_format)};
}

json Conv2DImpl::get_config() const {
  json c = base_config();
  conv::write_conv_keys(options_, c);
  return c;
}

Conv2DOptions conv2d_options_from_config(const json& c) {
  return conv::read_conv_keys<Conv2DOptions>(c, "Conv2D config");
}

KERAS_REGISTER_LAYER(Conv2D, [](const json& c) -> LayerPtr {
  return std::make_shared<Conv2DImpl>(conv2d_options_from_config(c));
});

}  // namespace keras::layers
