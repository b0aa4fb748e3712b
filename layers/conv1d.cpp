#include "layers/conv1d.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

Conv1DImpl::Conv1DImpl(Conv1DOptions o) : Layer(config::base_options(o)), options_(std::move(o)) {
  conv::check_conv_options(where(), options_);
  config::check_weight_args(where(), options_, config::kernel_and_bias<Conv1DOptions>());
}

void Conv1DImpl::validate_input(const std::vector<Shape>& shapes) const {
  Shape in = conv::channels_last_input(where(), shapes, 1, options_.data_format);
  int64_t c = in.back();
  if (built()) {
    int64_t built_c = kernel_.shape()[1] * options_.groups;
    if (c != built_c)
      fail<ShapeError>(where(), "an input with " + std::to_string(built_c) + " channels", "shape " + shape_str(shapes[0]),
                       "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
  } else if (c % options_.groups != 0) {
    fail<ShapeError>(where(), "input channels divisible by groups (" + std::to_string(options_.groups) + ")",
                     "shape " + shape_str(shapes[0]));
  }
  conv::output_extents(where(), in, {options_.kernel_size}, {options_.strides}, {options_.dilation_rate},
                       options_.padding);
}

void Conv1DImpl::build(const std::vector<Shape>& shapes) {
  int64_t c = conv::channels_last_input(where(), shapes, 1, options_.data_format).back();
  kernel_ = add_weight("kernel", {options_.kernel_size, c / options_.groups, options_.filters},
                       options_.kernel_initializer.ptr(), true, options_.kernel_regularizer.ptr(),
                       options_.kernel_constraint.ptr());
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.filters}, options_.bias_initializer.ptr(), true, options_.bias_regularizer.ptr(),
                       options_.bias_constraint.ptr());
}

TensorList Conv1DImpl::call(const TensorList& inputs, const CallContext&) {
  const Conv1DOptions& o = options_;
  Tensor x = conv::to_channels_last(inputs[0], o.data_format);
  Tensor y = ops::conv1d(x, kernel_.value(), o.use_bias ? bias_.value() : Tensor(),
                         ops::Conv1DArgs{.strides = o.strides, .padding = o.padding, .dilation_rate = o.dilation_rate,
                                         .groups = o.groups, .activation = o.activation});
  return {conv::from_channels_last(y, o.data_format)};
}

std::vector<Shape> Conv1DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape in = conv::channels_last_input(where(), shapes, 1, options_.data_format);
  auto l = conv::output_extents(where(), in, {options_.kernel_size}, {options_.strides}, {options_.dilation_rate},
                                options_.padding);
  return {conv::to_format({in[0], l[0], options_.filters}, options_.data_format)};
}

json Conv1DImpl::get_config() const {
  json c = base_config();
  conv::write_conv_keys(options_, c);
  return c;
}

Conv1DOptions conv1d_options_from_config(const json& c) {
  return conv::read_conv_keys<Conv1DOptions>(c, "Conv1D config");
}

KERAS_REGISTER_LAYER(Conv1D, [](const json& c) -> LayerPtr {
  return std::make_shared<Conv1DImpl>(conv1d_options_from_config(c));
});

}  // namespace keras::layers
