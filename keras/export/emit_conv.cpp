// ONNX emitters of the convolutions: Conv1D, Conv2D, DepthwiseConv2D, SeparableConv2D and
// Conv2DTranspose. They run channels-first (ONNX's layout) and leave their output so, so
// consecutive convolutions need no transposes; a BatchNormalization the walk folded in comes as
// EmitCall::fold (keras/models/conv_bn_fold.h computes the folded kernel and bias).
#include "backend/errors.h"
#include "backend/ops_conv.h"
#include "backend/tensor.h"
#include "keras/export/emitter.h"

namespace keras::onnx {
namespace {

HostTensor host(const Tensor& t) {
  const Tensor c = t.contiguous();
  return HostTensor{c.shape(), c.to_vector<float>()};
}

// The channels-first input of a convolution and the Keras spatial extents (-1 = unknown).
struct ConvInput {
  std::string name;
  std::vector<int64_t> spatial;
  bool keras_channels_first = false;  // data_format="channels_first": Keras's layout is ONNX's
};

ConvInput conv_input(Graph& g, const EmitCall& c) {
  const Value& x = c.inputs[0];
  ConvInput in;
  in.keras_channels_first = c.config.value("data_format", "channels_last") == "channels_first";
  in.name = in.keras_channels_first ? g.as_keras(x) : g.as_channels_first(x);
  const int64_t first = in.keras_channels_first ? 2 : 1;
  for (int64_t a = first; a < first + x.rank() - 2; ++a) in.spatial.push_back(x.shape[static_cast<size_t>(a)]);
  return in;
}

std::vector<Attr> conv_attrs(const EmitCall& c, const ConvInput& in, const std::vector<int64_t>& kernel) {
  const size_t n = kernel.size();
  return onnx::conv_attrs(in.spatial, kernel, config_ints(c.config, "strides", n), config_ints(c.config, "dilation_rate", n),
                          c.config.value("padding", "valid"));
}

Value conv_output(Graph& g, const EmitCall& c, const ConvInput& in, std::string y) {
  y = emit_activation(g, c.config.value("activation", "linear"), y, 1, c.hint("act"), c.layer.where());
  return c.output(y, !in.keras_channels_first);
}

// Conv1D (k, in/g, out) and Conv2D (kh, kw, in/g, out) -> ONNX (out, in/g, k...).
std::vector<Value> emit_conv(Graph& g, const EmitCall& c) {
  const ConvInput in = conv_input(g, c);
  const size_t n = in.spatial.size();
  const std::vector<int> perm = n == 1 ? std::vector<int>{2, 1, 0} : std::vector<int>{3, 2, 0, 1};
  std::string w, b;
  if (c.fold) {
    w = c.weight(g, "kernel_bn_folded", [&] { return permute(host(c.fold->folded_weights().first), perm); });
    b = c.weight(g, "bias_bn_folded", [&] { return host(c.fold->folded_weights().second); });
  } else {
    w = c.weight(g, "kernel_oihw", [&] { return permute(host_weight(c.layer, "kernel"), perm); });
    if (c.config.value("use_bias", true)) b = c.weight(g, "bias", [&] { return host_weight(c.layer, "bias"); });
  }
  std::vector<Attr> attrs = conv_attrs(c, in, config_ints(c.config, "kernel_size", n));
  attrs.push_back(attr("group", c.config.value("groups", int64_t{1})));
  std::vector<std::string> args{in.name, w};
  if (!b.empty()) args.push_back(b);
  return {conv_output(g, c, in, g.add("Conv", args, std::move(attrs), c.hint("Conv")))};
}

// A depthwise kernel (kh, kw, C, m) as ONNX's grouped (C * m, 1, kh, kw): output channel c * m + j.
HostTensor depthwise_oihw(HostTensor k) {
  k.shape = {k.shape[0], k.shape[1], 1, k.shape[2] * k.shape[3]};
  return permute(k, {3, 2, 0, 1});
}

std::string emit_depthwise_core(Graph& g, const EmitCall& c, const ConvInput& in, const std::string& kernel_name,
                                bool with_bias) {
  std::string w, b;
  if (c.fold) {
    w = c.weight(g, "kernel_bn_folded", [&] { return permute(host(c.fold->folded_weights().first), {3, 2, 0, 1}); });
    b = c.weight(g, "bias_bn_folded", [&] { return host(c.fold->folded_weights().second); });
  } else {
    w = c.weight(g, kernel_name + "_oihw", [&] { return depthwise_oihw(host_weight(c.layer, kernel_name)); });
    if (with_bias && c.config.value("use_bias", true)) b = c.weight(g, "bias", [&] { return host_weight(c.layer, "bias"); });
  }
  const int64_t channels = c.inputs[0].shape[in.keras_channels_first ? 1 : static_cast<size_t>(c.inputs[0].rank() - 1)];
  std::vector<Attr> attrs = conv_attrs(c, in, config_ints(c.config, "kernel_size", 2));
  attrs.push_back(attr("group", channels));
  std::vector<std::string> args{in.name, w};
  if (!b.empty()) args.push_back(b);
  return g.add("Conv", args, std::move(attrs), c.hint("DepthwiseConv"));
}

std::vector<Value> emit_depthwise(Graph& g, const EmitCall& c) {
  const ConvInput in = conv_input(g, c);
  return {conv_output(g, c, in, emit_depthwise_core(g, c, in, "kernel", true))};
}

// SeparableConv2D: the depthwise convolution, then a 1x1 convolution with the bias.
std::vector<Value> emit_separable(Graph& g, const EmitCall& c) {
  const ConvInput in = conv_input(g, c);
  const std::string d = emit_depthwise_core(g, c, in, "depthwise_kernel", false);
  const std::string w = c.weight(g, "pointwise_kernel_oihw", [&] {
    return permute(host_weight(c.layer, "pointwise_kernel"), {3, 2, 0, 1});
  });
  std::vector<std::string> args{d, w};
  if (c.config.value("use_bias", true)) args.push_back(c.weight(g, "bias", [&] { return host_weight(c.layer, "bias"); }));
  return {conv_output(g, c, in, g.add("Conv", args, {attr("kernel_shape", std::vector<int64_t>{1, 1})}, c.hint("PointwiseConv")))};
}

// Conv2DTranspose: kernel (kh, kw, out, in) -> ONNX (in, out, kh, kw). The transposed convolution
// of the forward one with TF's padding for the output size: crop that padding's leading part,
// then whatever makes the output Keras's size (output_padding when it is larger).
std::vector<Value> emit_conv_transpose(Graph& g, const EmitCall& c) {
  const ConvInput in = conv_input(g, c);
  const std::vector<int64_t> kernel = config_ints(c.config, "kernel_size", 2);
  const std::vector<int64_t> strides = config_ints(c.config, "strides", 2);
  const std::vector<int64_t> dilations = config_ints(c.config, "dilation_rate", 2);
  const Shape& out_shape = c.outputs[0].shape;
  const int64_t first = in.keras_channels_first ? 2 : 1;
  std::vector<int64_t> pads(4, 0), output_padding(2, 0);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t out = out_shape[static_cast<size_t>(first) + i];
    if (in.spatial[i] < 0 || out < 0)
      fail<NotImplementedError>(c.layer.where() + " ONNX export", "known spatial extents", shape_str(c.inputs[0].shape));
    const int64_t before = ops::conv_pads(out, kernel[i], c.config.value("padding", "valid"), strides[i], dilations[i]).first;
    const int64_t full = (in.spatial[i] - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1;
    const int64_t after = full - before - out;
    pads[i] = before;
    if (after >= 0) pads[2 + i] = after;
    else output_padding[i] = -after;
  }
  const std::string w = c.weight(g, "kernel_iohw", [&] { return permute(host_weight(c.layer, "kernel"), {3, 2, 0, 1}); });
  std::vector<std::string> args{in.name, w};
  if (c.config.value("use_bias", true)) args.push_back(c.weight(g, "bias", [&] { return host_weight(c.layer, "bias"); }));
  std::vector<Attr> attrs{attr("kernel_shape", kernel), attr("strides", strides), attr("dilations", dilations),
                          attr("pads", pads), attr("output_padding", output_padding)};
  return {conv_output(g, c, in, g.add("ConvTranspose", args, std::move(attrs), c.hint("ConvTranspose")))};
}

KERAS_REGISTER_ONNX_EMITTER("Conv1D", emit_conv);
KERAS_REGISTER_ONNX_EMITTER("Conv2D", emit_conv);
KERAS_REGISTER_ONNX_EMITTER("DepthwiseConv2D", emit_depthwise);
KERAS_REGISTER_ONNX_EMITTER("SeparableConv2D", emit_separable);
KERAS_REGISTER_ONNX_EMITTER("Conv2DTranspose", emit_conv_transpose);

}  // namespace

// kernel_shape, strides, dilations and pads (or auto_pad SAME_UPPER when an extent is unknown)
// of Keras's padding: "same" pads the extra row at the end, as TF; "causal" pads on the left.
std::vector<Attr> conv_attrs(const std::vector<int64_t>& spatial, const std::vector<int64_t>& kernel,
                             const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                             const std::string& padding) {
  const size_t n = kernel.size();
  std::vector<Attr> attrs{attr("kernel_shape", kernel), attr("strides", strides), attr("dilations", dilations)};
  std::vector<int64_t> pads(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (padding == "same" && spatial[i] < 0) {
      attrs.push_back(attr("auto_pad", "SAME_UPPER"));
      return attrs;
    }
    const auto [before, after] = ops::conv_pads(spatial[i], kernel[i], padding, strides[i], dilations[i]);
    pads[i] = before;
    pads[n + i] = after;
  }
  attrs.push_back(attr("pads", pads));
  return attrs;
}

}  // namespace keras::onnx
