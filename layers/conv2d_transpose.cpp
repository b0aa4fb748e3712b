#include "layers/conv2d_transpose.h"

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

Conv2DTransposeImpl::Conv2DTransposeImpl(Conv2DTransposeOptions o)
    : Layer(config::base_options(o)), options_(std::move(o)) {
  const Conv2DTransposeOptions& op = options_;
  conv::check_conv_options(where(), op);
  if (op.output_padding) {
    const PairArg& p = *op.output_padding;
    if (p.first < 0 || p.second < 0 || p.first >= op.strides.first || p.second >= op.strides.second)
      fail<ValueError>(where(), "output_padding in [0, strides) per axis",
                       "output_padding " + conv::pair_to_json(p).dump() + " with strides " +
                           conv::pair_to_json(op.strides).dump());
  }
  config::check_weight_args(where(), op, config::kernel_and_bias<Conv2DTransposeOptions>());
}

void Conv2DTransposeImpl::validate_input(const std::vector<Shape>& shapes) const {
  Shape in = conv::channels_last_input(where(), shapes, 2, options_.data_format);
  if (built() && in.back() != kernel_.shape()[3])
    fail<ShapeError>(where(), "an input with " + std::to_string(kernel_.shape()[3]) + " channels",
                     "shape " + shape_str(shapes[0]),
                     "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
}

void Conv2DTransposeImpl::build(const std::vector<Shape>& shapes) {
  int64_t c = conv::channels_last_input(where(), shapes, 2, options_.data_format).back();
  kernel_ = add_weight("kernel", {options_.kernel_size.first, options_.kernel_size.second, options_.filters, c},
                       options_.kernel_initializer.ptr(), true, options_.kernel_regularizer.ptr(),
                       options_.kernel_constraint.ptr());
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.filters}, options_.bias_initializer.ptr(), true, options_.bias_regularizer.ptr(),
                       options_.bias_constraint.ptr());
}

TensorList Conv2DTransposeImpl::call(const TensorList& inputs, const CallContext&) {
  const Conv2DTransposeOptions& o = options_;
  Tensor x = conv::to_channels_last(inputs[0], o.data_format);
  std::optional<std::array<int64_t, 2>> op;
  if (o.output_padding) op = o.output_padding->size2();
  Tensor y = ops::conv2d_transpose(x, kernel_.value(), o.use_bias ? bias_.value() : Tensor(),
                                   ops::Conv2DTransposeArgs{.strides = o.strides.size2(), .padding = o.padding,
                                                            .output_padding = op,
                                                            .dilation_rate = o.dilation_rate.size2(),
                                                            .activation = o.activation});
  return {conv::from_channels_last(y, o.data_format)};
}

std::vector<Shape> Conv2DTransposeImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const Conv2DTransposeOptions& o = options_;
  Shape in = conv::channels_last_input(where(), shapes, 2, o.data_format);
  int64_t oh = ops::conv_transpose_output_length(in[1], o.kernel_size.first, o.padding,
                                                 o.output_padding ? o.output_padding->first : -1, o.strides.first,
                                                 o.dilation_rate.first);
  int64_t ow = ops::conv_transpose_output_length(in[2], o.kernel_size.second, o.padding,
                                                 o.output_padding ? o.output_padding->second : -1, o.strides.second,
                                                 o.dilation_rate.second);
  return {conv::to_format({in[0], oh, ow, o.filters}, o.data_format)};
}

json Conv2DTransposeImpl::get_config() const {
  json c = base_config();
  conv::write_conv_keys(options_, c);
  return c;
}

Conv2DTransposeOptions conv2d_transpose_options_from_config(const json& c) {
  return conv::read_conv_keys<Conv2DTransposeOptions>(c, "Conv2DTranspose config");
}

KERAS_REGISTER_LAYER(Conv2DTranspose, [](const json& c) -> LayerPtr {
  return std::make_shared<Conv2DTransposeImpl>(conv2d_transpose_options_from_config(c));
});

}  // namespace keras::layers
