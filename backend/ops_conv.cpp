// Convolution ops: shape functions, gradients and the Keras-style compositions (conv1d,
// conv2d_transpose, depthwise_conv2d). Kernels are in backend/cpu/conv_kernels.cpp.
//
// Only three ops are registered (conv2d, its backward-data and backward-weights) with explicit
// pads, so a device backend implements three kernels and every Keras convolution follows.
// Each backward op is linear in both inputs, and its gradient is again one of the three ops:
//   <g, bwd_data(dy, K)>     = <conv(g, K), dy>      = <K, bwd_weights(g, dy)>
//   <G, bwd_weights(x, dy)>  = <conv(x, G), dy>      = <x, bwd_data(dy, G)>
#include "backend/ops_conv.h"

#include "backend/autodiff.h"
#include "backend/instrumentation.h"
#include "backend/ops.h"

namespace keras {

Attrs ConvParams::to_attrs() const {
  return Attrs{{"strides", std::vector<int64_t>{stride_h, stride_w}},
               {"dilation", std::vector<int64_t>{dilation_h, dilation_w}},
               {"pads", std::vector<int64_t>{pad_top, pad_bottom, pad_left, pad_right}},
               {"groups", groups}};
}

ConvParams ConvParams::from_attrs(const Attrs& a) {
  ConvParams p;
  const auto& s = a.get_ints("strides");
  const auto& d = a.get_ints("dilation");
  const auto& pads = a.get_ints("pads");
  if (s.size() != 2 || d.size() != 2 || pads.size() != 4)
    fail<ValueError>("conv2d", "strides (2), dilation (2) and pads (4)", a.str());
  p.stride_h = s[0], p.stride_w = s[1], p.dilation_h = d[0], p.dilation_w = d[1];
  p.pad_top = pads[0], p.pad_bottom = pads[1], p.pad_left = pads[2], p.pad_right = pads[3];
  p.groups = a.get_int("groups");
  return p;
}

std::string ConvParams::str() const {
  auto pair = [](int64_t a, int64_t b) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ")"; };
  return "strides " + pair(stride_h, stride_w) + ", dilation " + pair(dilation_h, dilation_w) + ", pads (top " +
         std::to_string(pad_top) + ", bottom " + std::to_string(pad_bottom) + ", left " + std::to_string(pad_left) +
         ", right " + std::to_string(pad_right) + "), groups " + std::to_string(groups);
}

namespace {

void check_floats(const std::string& op, const std::vector<TensorSpec>& in) {
  for (const auto& s : in) {
    if (!is_floating(s.dtype))
      fail<TypeError>(op, "floating-point operands", dtype_name(s.dtype), "Cast to a float type first.");
    if (s.dtype != in[0].dtype)
      fail<TypeError>(op, "operands of one dtype", dtype_name(in[0].dtype) + " and " + dtype_name(s.dtype),
                      "Cast one operand first.");
  }
}

void check_params(const std::string& op, const ConvParams& p) {
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1 || p.groups < 1 || p.pad_top < 0 ||
      p.pad_bottom < 0 || p.pad_left < 0 || p.pad_right < 0)
    fail<ValueError>(op, "strides, dilation and groups >= 1 and pads >= 0", p.str());
}

// Output spatial extent, or a ShapeError when the dilated kernel exceeds the padded input.
int64_t out_extent(const std::string& op, const std::string& axis, int64_t in, int64_t pad, int64_t k,
                   int64_t dil, int64_t stride, const Shape& xs, const Shape& ks, const ConvParams& p) {
  int64_t span = dil * (k - 1) + 1;
  if (in < 0) return -1;
  if (in + pad < span)
    fail<ShapeError>(op, "a " + axis + " kernel extent (dilated: " + std::to_string(span) +
                         ") no larger than the padded input (" + std::to_string(in + pad) + ")",
                     "input " + shape_str(xs) + " and kernel " + shape_str(ks) + " with " + p.str(),
                     "Use padding='same', a smaller kernel or a larger input.");
  return (in + pad - span) / stride + 1;
}

// Validates x (N,H,W,C) against kernel (kh,kw,C/groups,O) and returns y's shape.
Shape conv_out_shape(const std::string& op, const Shape& xs, const Shape& ks, const ConvParams& p) {
  check_params(op, p);
  if (xs.size() != 4)
    fail<ShapeError>(op, "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(xs));
  if (ks.size() != 4)
    fail<ShapeError>(op, "a kernel of rank 4 (kh, kw, in/groups, out)", "shape " + shape_str(ks));
  if (ks[3] % p.groups != 0)
    fail<ShapeError>(op, "output channels divisible by groups (" + std::to_string(p.groups) + ")",
                     "kernel " + shape_str(ks));
  if (xs[3] >= 0 && xs[3] != ks[2] * p.groups)
    fail<ShapeError>(op, "input channels = kernel.shape[2] * groups = " + std::to_string(ks[2] * p.groups),
                     "input " + shape_str(xs) + " and kernel " + shape_str(ks) + " with groups " +
                         std::to_string(p.groups),
                     xs[3] % p.groups != 0 ? "The input channels must be divisible by groups." : "");
  int64_t oh = out_extent(op, "height", xs[1], p.pad_top + p.pad_bottom, ks[0], p.dilation_h, p.stride_h, xs, ks, p);
  int64_t ow = out_extent(op, "width", xs[2], p.pad_left + p.pad_right, ks[1], p.dilation_w, p.stride_w, xs, ks, p);
  return {xs[0], oh, ow, ks[3]};
}

void check_bias(const std::string& op, const Shape& bs, const Shape& ks) {
  if (bs.size() != 1 || bs[0] != ks[3])
    fail<ShapeError>(op, "a bias of shape (" + std::to_string(ks[3]) + ")",
                     "bias " + shape_str(bs) + " with kernel " + shape_str(ks));
}

std::vector<TensorSpec> conv2d_shape(const std::vector<TensorSpec>& in, const Attrs& a) {
  if (in.size() != 2 && in.size() != 3)
    fail<ValueError>("conv2d", "2 or 3 inputs (x, kernel[, bias])", std::to_string(in.size()) + " inputs");
  check_floats("conv2d", in);
  if (in.size() == 3) check_bias("conv2d", in[2].shape, in[1].shape);
  return {{conv_out_shape("conv2d", in[0].shape, in[1].shape, ConvParams::from_attrs(a)), in[0].dtype}};
}

// Inputs dy, kernel[, bias]: the bias (one per input channel) makes it conv2d_transpose's kernel.
std::vector<TensorSpec> backward_data_shape(const std::vector<TensorSpec>& in, const Attrs& a) {
  const std::string op = "conv2d_backward_data";
  if (in.size() != 2 && in.size() != 3)
    fail<ValueError>(op, "2 or 3 inputs (dy, kernel[, bias])", std::to_string(in.size()) + " inputs");
  check_floats(op, in);
  Shape xs = a.get_ints("input_shape");
  Shape ys = conv_out_shape(op, xs, in.at(1).shape, ConvParams::from_attrs(a));
  if (in[0].shape != ys)
    fail<ShapeError>(op, "dy of shape " + shape_str(ys), "dy " + shape_str(in[0].shape) + " for input " +
                     shape_str(xs) + " and kernel " + shape_str(in[1].shape));
  if (in.size() == 3 && in[2].shape != Shape{xs[3]})
    fail<ShapeError>(op, "a bias of shape (" + std::to_string(xs[3]) + ")",
                     "bias " + shape_str(in[2].shape) + " for output " + shape_str(xs));
  return {{xs, in[0].dtype}};
}

std::vector<TensorSpec> backward_weights_shape(const std::vector<TensorSpec>& in, const Attrs& a) {
  const std::string op = "conv2d_backward_weights";
  check_floats(op, in);
  Shape ks = a.get_ints("kernel_shape");
  Shape ys = conv_out_shape(op, in.at(0).shape, ks, ConvParams::from_attrs(a));
  if (in[1].shape != ys)
    fail<ShapeError>(op, "dy of shape " + shape_str(ys), "dy " + shape_str(in[1].shape) + " for input " +
                     shape_str(in[0].shape) + " and kernel " + shape_str(ks));
  std::vector<TensorSpec> out{{ks, in[0].dtype}};
  if (a.get_bool("with_bias", false)) out.push_back({{ks[3]}, in[0].dtype});
  return out;
}

// Activations oneDNN fuses and whose derivative follows from the output (as ops::dense).
bool fusable_with_grad(const std::string& act) {
  return act == "linear" || act == "relu" || act == "sigmoid" || act == "tanh" || act == "elu";
}
bool fusable_inference_only(const std::string& act) { return act == "gelu" || act == "swish" || act == "relu6"; }

std::string canonical_activation(const std::string& name) {
  if (name.empty() || name == "None" || name == "none") return "linear";
  if (name == "silu") return "swish";
  return name;
}

Attrs fwd_attrs(const ConvParams& p, const std::string& act, bool training) {
  Attrs a = p.to_attrs();
  a.set("activation", act).set("prop", std::string(training ? "training" : "inference"));
  return a;
}

// The raw op call (no activation splitting); `training` picks oneDNN's propagation kind.
Tensor run_conv(const Tensor& x, const Tensor& k, const Tensor& b, const ConvParams& p, const std::string& act) {
  static const OpDef& def = OpRegistry::instance().find("conv2d");
  bool taping = grad_recording() && (x.requires_grad() || k.requires_grad() || (b.defined() && b.requires_grad()));
  Attrs a = fwd_attrs(p, act, taping);
  return b.defined() ? run_op1(def, {x, k, b}, a) : run_op1(def, {x, k}, a);
}

TensorList conv2d_grad(const GradContext& g) {
  static const OpDef& act_grad = OpRegistry::instance().find("dense_activation_grad");
  const std::string& act = g.attrs.get_string("activation");
  if (!fusable_with_grad(act))
    fail<StateError>("gradient of conv2d", "an activation differentiable from its output", act,
                     "This activation is only fused when no gradient is taken.");
  ConvParams p = ConvParams::from_attrs(g.attrs);
  Tensor dz = g.grad_outputs[0];
  if (act != "linear") dz = run_op1(act_grad, {dz, g.output(0)}, Attrs{{"activation", act}});
  TensorList out(g.input_specs.size());
  const Tensor& x = g.input(0);
  const Tensor& k = g.input(1);
  if (g.needs_grad[0]) out[0] = ops::conv2d_backward_data(dz, k, x.shape(), p);
  bool bias_grad = out.size() > 2 && g.needs_grad[2];
  if (g.needs_grad[1]) {
    TensorList w = ops::conv2d_backward_weights(x, dz, k.shape(), p, bias_grad);
    out[1] = w[0];
    if (bias_grad) out[2] = w[1];
  } else if (bias_grad) {
    out[2] = ops::sum(dz, {0, 1, 2}, false);
  }
  return out;
}

TensorList backward_data_grad(const GradContext& g) {
  ConvParams p = ConvParams::from_attrs(g.attrs);
  const Tensor& gx = g.grad_outputs[0];
  TensorList out(g.input_specs.size());
  if (g.needs_grad[0]) out[0] = run_conv(gx, g.input(1), Tensor(), p, "linear");
  if (g.needs_grad[1]) out[1] = ops::conv2d_backward_weights(gx, g.input(0), g.input(1).shape(), p, false)[0];
  if (out.size() > 2 && g.needs_grad[2]) out[2] = ops::sum(gx, {0, 1, 2}, false);
  return out;
}

TensorList backward_weights_grad(const GradContext& g) {
  ConvParams p = ConvParams::from_attrs(g.attrs);
  const Tensor& gk = g.grad_outputs[0];
  Tensor gb = g.grad_outputs.size() > 1 ? g.grad_outputs[1] : Tensor();
  TensorList out(2);
  if (g.needs_grad[0]) out[0] = ops::conv2d_backward_data(g.input(1), gk, g.input(0).shape(), p);
  if (g.needs_grad[1]) out[1] = run_conv(g.input(0), gk, gb, p, "linear");
  return out;
}

std::pair<int64_t, int64_t> same_pads(int64_t in, int64_t k, int64_t s, int64_t d) {
  int64_t span = d * (k - 1) + 1;
  int64_t out = (in + s - 1) / s;
  int64_t total = std::max<int64_t>((out - 1) * s + span - in, 0);
  return {total / 2, total - total / 2};
}

}  // namespace

// Inputs x, kernel[, bias]; attrs: geometry (ConvParams), "activation" (fused: linear, relu,
// sigmoid, tanh, elu; gelu/swish only without a gradient), "prop" ("training"/"inference").
KERAS_REGISTER_OP(conv2d) {
  def.shape = conv2d_shape;
  def.grad = conv2d_grad;
  def.save = SaveBoth;
}
// Inputs dy, kernel[, bias]; attrs: geometry and "input_shape".
KERAS_REGISTER_OP(conv2d_backward_data) {
  def.shape = backward_data_shape;
  def.grad = backward_data_grad;
  def.save = SaveInputs;
}
// Inputs x, dy; attrs: geometry, "kernel_shape", "with_bias" (adds the bias gradient output).
KERAS_REGISTER_OP(conv2d_backward_weights) {
  def.shape = backward_weights_shape;
  def.grad = backward_weights_grad;
  def.save = SaveInputs;
}

namespace ops {

int64_t conv_output_length(int64_t input, int64_t kernel, const std::string& padding, int64_t stride,
                           int64_t dilation) {
  if (input < 0) return -1;
  int64_t span = dilation * (kernel - 1) + 1;
  if (padding == "same" || padding == "causal") return (input + stride - 1) / stride;
  if (padding == "valid") return input < span ? 0 : (input - span) / stride + 1;
  fail<ValueError>("conv", "padding 'valid', 'same' or 'causal'", "'" + padding + "'");
}

int64_t conv_transpose_output_length(int64_t input, int64_t kernel, const std::string& padding,
                                     int64_t output_padding, int64_t stride, int64_t dilation) {
  if (input < 0) return -1;
  int64_t span = dilation * (kernel - 1) + 1;
  if (padding != "valid" && padding != "same")
    fail<ValueError>("conv_transpose", "padding 'valid' or 'same'", "'" + padding + "'");
  if (output_padding < 0)
    return padding == "valid" ? input * stride + std::max<int64_t>(span - stride, 0) : input * stride;
  int64_t pad = padding == "same" ? span / 2 : 0;
  return (input - 1) * stride + span - 2 * pad + output_padding;
}

std::pair<int64_t, int64_t> conv_pads(int64_t input, int64_t kernel, const std::string& padding, int64_t stride,
                                      int64_t dilation) {
  if (padding == "valid") return {0, 0};
  if (padding == "same") return same_pads(input, kernel, stride, dilation);
  if (padding == "causal") return {dilation * (kernel - 1), 0};
  fail<ValueError>("conv", "padding 'valid', 'same' or 'causal'", "'" + padding + "'");
}

Tensor conv2d_explicit(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& params,
                       const std::string& activation) {
  std::string act = canonical_activation(activation);
  bool fuse = fusable_with_grad(act);
  if (!fuse && fusable_inference_only(act))
    fuse = !(grad_recording() &&
             (x.requires_grad() || kernel.requires_grad() || (bias.defined() && bias.requires_grad())));
  if (act != "linear" && instrumentation::split_fused_activations()) fuse = false;  // check-numerics
  Tensor y = run_conv(x, kernel, bias, params, fuse ? act : "linear");
  return fuse ? y : ops::activation(act, y);
}

Tensor conv2d_backward_data(const Tensor& dy, const Tensor& kernel, const Shape& input_shape, const ConvParams& p) {
  static const OpDef& def = OpRegistry::instance().find("conv2d_backward_data");
  Attrs a = p.to_attrs();
  a.set("input_shape", std::vector<int64_t>(input_shape.begin(), input_shape.end()));
  return run_op1(def, {dy, kernel}, a);
}

TensorList conv2d_backward_weights(const Tensor& x, const Tensor& dy, const Shape& kernel_shape, const ConvParams& p,
                                   bool with_bias) {
  static const OpDef& def = OpRegistry::instance().find("conv2d_backward_weights");
  Attrs a = p.to_attrs();
  a.set("kernel_shape", std::vector<int64_t>(kernel_shape.begin(), kernel_shape.end())).set("with_bias", with_bias);
  return run_op(def, {x, dy}, a);
}

namespace {
void check_rank(const std::string& op, const Tensor& x, int rank, const std::string& layout) {
  if (x.rank() != rank)
    fail<ShapeError>(op, "an input of rank " + std::to_string(rank) + " " + layout, "shape " + shape_str(x.shape()));
}
void check_kernel_rank(const std::string& op, const Tensor& k, int rank, const std::string& layout) {
  if (k.rank() != rank)
    fail<ShapeError>(op, "a kernel of rank " + std::to_string(rank) + " " + layout, "shape " + shape_str(k.shape()));
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& kernel, const Tensor& bias, const Conv2DArgs& a) {
  check_rank("conv2d", x, 4, "(batch, height, width, channels)");
  check_kernel_rank("conv2d", kernel, 4, "(kh, kw, in/groups, out)");
  if (a.padding == "causal") fail<ValueError>("conv2d", "padding 'valid' or 'same'", "'causal'");
  return conv2d_explicit(x, kernel, bias, conv2d_params(x.shape(), kernel.shape(), a), a.activation);
}

ConvParams conv2d_params(const Shape& x, const Shape& kernel, const Conv2DArgs& a) {
  ConvParams p;
  p.stride_h = a.strides[0], p.stride_w = a.strides[1];
  p.dilation_h = a.dilation_rate[0], p.dilation_w = a.dilation_rate[1];
  p.groups = a.groups;
  std::tie(p.pad_top, p.pad_bottom) = conv_pads(x[1], kernel[0], a.padding, p.stride_h, p.dilation_h);
  std::tie(p.pad_left, p.pad_right) = conv_pads(x[2], kernel[1], a.padding, p.stride_w, p.dilation_w);
  return p;
}

Tensor conv1d(const Tensor& x, const Tensor& kernel, const Tensor& bias, const Conv1DArgs& a) {
  check_rank("conv1d", x, 3, "(batch, steps, channels)");
  check_kernel_rank("conv1d", kernel, 3, "(k, in/groups, out)");
  ConvParams p;
  p.stride_w = a.strides, p.dilation_w = a.dilation_rate, p.groups = a.groups;
  std::tie(p.pad_left, p.pad_right) = conv_pads(x.dim(1), kernel.dim(0), a.padding, a.strides, a.dilation_rate);
  Tensor x4 = ops::reshape(x, {x.dim(0), 1, x.dim(1), x.dim(2)});
  Tensor k4 = ops::reshape(kernel, {1, kernel.dim(0), kernel.dim(1), kernel.dim(2)});
  Tensor y = conv2d_explicit(x4, k4, bias, p, a.activation);
  return ops::reshape(y, {y.dim(0), y.dim(2), y.dim(3)});
}

Tensor conv2d_transpose(const Tensor& x, const Tensor& kernel, const Tensor& bias, const Conv2DTransposeArgs& a) {
  const std::string op = "conv2d_transpose";
  check_rank(op, x, 4, "(batch, height, width, channels)");
  check_kernel_rank(op, kernel, 4, "(kh, kw, out, in)");
  if (x.dim(3) != kernel.dim(3))
    fail<ShapeError>(op, "input channels = kernel.shape[3] = " + std::to_string(kernel.dim(3)),
                     "input " + shape_str(x.shape()) + " and kernel " + shape_str(kernel.shape()));
  std::array<int64_t, 2> out{};
  ConvParams p;
  p.stride_h = a.strides[0], p.stride_w = a.strides[1];
  p.dilation_h = a.dilation_rate[0], p.dilation_w = a.dilation_rate[1];
  for (int i = 0; i < 2; ++i) {
    int64_t op_i = a.output_padding ? (*a.output_padding)[static_cast<size_t>(i)] : -1;
    if (a.output_padding && (op_i < 0 || op_i >= a.strides[static_cast<size_t>(i)]))
      fail<ValueError>(op, "output_padding in [0, stride)",
                       "output_padding " + std::to_string(op_i) + " with stride " + std::to_string(a.strides[static_cast<size_t>(i)]));
    out[static_cast<size_t>(i)] = conv_transpose_output_length(x.dim(1 + i), kernel.dim(i), a.padding, op_i,
                                                               a.strides[static_cast<size_t>(i)],
                                                               a.dilation_rate[static_cast<size_t>(i)]);
  }
  // The forward convolution this transposes: from the output size, with TF's padding for it.
  std::tie(p.pad_top, p.pad_bottom) = conv_pads(out[0], kernel.dim(0), a.padding, p.stride_h, p.dilation_h);
  std::tie(p.pad_left, p.pad_right) = conv_pads(out[1], kernel.dim(1), a.padding, p.stride_w, p.dilation_w);
  // oneDNN needs the forward formula to land exactly on x's extent: absorb the remainder on the
  // bottom/right (those rows see no kernel tap from x, as in TF).
  auto fit = [](int64_t in, int64_t outl, int64_t k, int64_t s, int64_t d, int64_t before, int64_t& after) {
    int64_t span = d * (k - 1) + 1;
    while ((outl + before + after - span) / s + 1 > in && after > 0) --after;
    while ((outl + before + after - span) / s + 1 < in) ++after;
  };
  fit(x.dim(1), out[0], kernel.dim(0), p.stride_h, p.dilation_h, p.pad_top, p.pad_bottom);
  fit(x.dim(2), out[1], kernel.dim(1), p.stride_w, p.dilation_w, p.pad_left, p.pad_right);
  // The bias is added inside the backward-data kernel: no separate add op, buffer or tape node.
  static const OpDef& bwd_data = OpRegistry::instance().find("conv2d_backward_data");
  Attrs attrs = p.to_attrs();
  attrs.set("input_shape", std::vector<int64_t>{x.dim(0), out[0], out[1], kernel.dim(2)});
  Tensor y = bias.defined() ? run_op1(bwd_data, {x, kernel, bias}, attrs) : run_op1(bwd_data, {x, kernel}, attrs);
  std::string act = canonical_activation(a.activation);
  return act == "linear" ? y : ops::activation(act, y);
}

Tensor depthwise_conv2d(const Tensor& x, const Tensor& kernel, const Tensor& bias, const DepthwiseConv2DArgs& a) {
  const std::string op = "depthwise_conv2d";
  check_rank(op, x, 4, "(batch, height, width, channels)");
  check_kernel_rank(op, kernel, 4, "(kh, kw, in, depth_multiplier)");
  if (x.dim(3) != kernel.dim(2))
    fail<ShapeError>(op, "input channels = kernel.shape[2] = " + std::to_string(kernel.dim(2)),
                     "input " + shape_str(x.shape()) + " and kernel " + shape_str(kernel.shape()));
  Tensor k = ops::reshape(kernel, {kernel.dim(0), kernel.dim(1), 1, kernel.dim(2) * kernel.dim(3)});
  return conv2d(x, k, bias,
                Conv2DArgs{.strides = a.strides, .padding = a.padding, .dilation_rate = a.dilation_rate,
                           .groups = x.dim(3), .activation = a.activation});
}

}  // namespace ops
}  // namespace keras
